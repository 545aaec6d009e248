"""``tune bench``: one run at the workload's load, or a capacity search."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from tuner.core import ConfigError, Settings, SlosNotMet, TunerError
from tuner.loadgen import normalise_endpoint, route_for, run_loop
from tuner.measurement import CapacityResult, make_report, open_bench, verdict_text, write_report
from tuner.metrics import RunSummary
from tuner.report import capacity_table, prefix_cache_warning, summary_table
from tuner.ui import progress_display
from tuner.workload import (
    Stop,
    Workload,
    given_tokenizer_file,
    implausible_run,
    load_workload,
    plan_notes,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in the workload for this run."""

    load: float | None = None
    duration_s: float | None = None
    seed: int | None = None
    epoch: int | None = None
    """The first epoch of the prompts; None: a fresh one (drawn), so a run never replays the
    prompts an earlier run left in the server's prefix cache."""

    def apply(self, workload: Workload) -> Workload:
        update: dict[str, object] = {}
        if self.load is not None:
            update["arrival"] = workload.arrival.with_load(self.load)
        if self.duration_s is not None:
            update["stop"] = Stop(duration_s=self.duration_s)
        if self.seed is not None:
            update["seed"] = self.seed
        return workload.model_copy(update=update) if update else workload


def fresh_epoch() -> int:
    """A first epoch no earlier run is likely to have used (a run's steps count up from it)."""
    return secrets.randbelow(1_000_000) * 1000


def verdict_exit(result: RunSummary | None, capacity: CapacityResult | None) -> None:
    """Raise what the exit code says when nothing met the SLOs (3) or nothing was measured
    (1); return when a load met them."""
    runs = capacity.steps if capacity is not None else [result] if result else []
    if result is not None and result.slo.passed:
        return
    judged = [s for s in runs if not s.not_measured]
    if not judged:
        why = runs[-1].not_measured if runs else "no run"
        raise TunerError(f"nothing was measured: {why}")
    if capacity is None:
        raise SlosNotMet(f"the run did not meet the SLOs at {judged[-1].load:.3g} "
                         f"{judged[-1].load_unit}: {verdict_text(judged[-1])}")
    lowest = min(judged, key=lambda s: s.load)
    raise SlosNotMet(f"no load met the SLOs: all {len(judged)} measured steps failed; the "
                     f"lowest, {lowest.load:.3g} {lowest.load_unit}: {verdict_text(lowest)}")


def bench_command(endpoint: str, workload_path: Path, *, find_capacity: bool,
                  json_path: Path | None, tokenizer: Path | None, metrics_url: str | None,
                  settings: Settings, console: Console, progress_console: Console,
                  workers: int | None = None, overrides: Overrides = Overrides(),
                  transport: str | None = None) -> None:
    route = route_for(normalise_endpoint(endpoint), transport)
    if tokenizer is not None and given_tokenizer_file(tokenizer) is None:
        raise ConfigError(f"--tokenizer {tokenizer}: no tokenizer.json there; give the folder "
                          "that holds it")
    workload = overrides.apply(load_workload(workload_path))
    epoch = fresh_epoch() if overrides.epoch is None else overrides.epoch
    console.print(f"prompts: seed {workload.seed}, epoch {epoch} ("
                  + ("fresh; " if overrides.epoch is None else "")
                  + f"--seed {workload.seed} --epoch {epoch} sends them again)", highlight=False,
                  soft_wrap=True)
    if not find_capacity:
        for warning in implausible_run(workload):
            log.warning("%s: %s", workload_path, warning)
    for note in plan_notes(workload):
        console.print(note)
    if route.proxy is not None or transport is not None:
        console.print(f"client: {route.describe()}", highlight=False, soft_wrap=True)

    async def go() -> None:
        with progress_display(console, progress_console) as progress:
            progress.status("workload", f"{workload.name} ({workload_path})")
            progress.status("phase", "probing endpoint")
            bench = await open_bench(workload, endpoint, tokenizer=tokenizer,
                                     models_dir=settings.models_dir, metrics_url=metrics_url,
                                     progress=progress, workers=workers, epoch=epoch,
                                     route=route)
            try:
                if find_capacity:
                    capacity = await bench.capacity()
                    report = make_report(bench, workload_path, capacity=capacity)
                else:
                    progress.status("phase", f"measuring at {bench.load_label()}")
                    single = await bench.once()
                    report = make_report(bench, workload_path, single=single)
            except (asyncio.CancelledError, KeyboardInterrupt):
                if json_path is not None:  # keep what was measured (Ctrl-C or SIGTERM)
                    kept = write_report(make_report(bench, workload_path, interrupted=True),
                                        bench.records + bench.runner.partial, json_path)
                    console.print(f"interrupted: what was measured is in {json_path} and "
                                  f"{kept}", highlight=False, soft_wrap=True)
                raise
            finally:
                bench.close()
        if report.capacity is not None:
            console.print(capacity_table(report.capacity, workload.capacity,
                                         workload.load_unit))
        if report.result is not None:
            title = ("at the highest load that meets the SLOs" if find_capacity
                     else "at the workload's load")
            console.print(summary_table(report.result, title))
        elif not find_capacity:
            console.print("no figures: the run measured no request")
        measured = report.capacity.steps if report.capacity else [report.result]
        warning = prefix_cache_warning([s for s in measured if s is not None])
        if warning:
            log.warning("%s", warning)
        if not bench.caps.forces_output_length:
            console.print(f"note: output lengths {report.output_lengths}")
        if json_path is not None:
            records = write_report(report, bench.records, json_path)
            console.print(f"figures in {json_path}, per-request records in {records}")
        verdict_exit(report.result, report.capacity)

    run_loop(go(), sigterm=True)
