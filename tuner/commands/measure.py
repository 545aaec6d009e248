"""``tune measure``: one configuration, started N times, its capacity and cost each time.

Users run it to learn how noisy their setup is before a study. Each repeat is a fresh start
of the configuration, exactly what a trial of a study does (:mod:`tuner.study.repeats`: start,
readiness, warm-up, capacity search, interpolated capacity and its cost); the spread across
repeats is the measurement's noise. This command parses, prints and keeps the report, after
every start (:mod:`tuner.commands.measure_record`: what it keeps, and ``--resume``).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from tuner.commands.measure_record import (
    MeasureReport,
    check_machine,
    earlier_measurement,
    looks_after,
    starts_to_keep,
)
from tuner.commands.named_config import check_config
from tuner.commands.prepare import EngineFactory, Prepared, prepare, real_engines
from tuner.core import EXIT_NO_GAIN, EXIT_UNRESOLVED, RESOLUTION, Settings
from tuner.host import cpu_identity, running_on
from tuner.launch import guarded
from tuner.metrics import floored, pooled_spread, spread
from tuner.report import measure_table, spread_lines
from tuner.study import StudyConfig, TrialResult
from tuner.study.repeats import (
    PairedOutcome,
    Side,
    interleaved,
    measure_pairs,
    measure_repeats,
    paired_outcome,
    results_floor,
)
from tuner.study.results import save_noise_record
from tuner.ui import progress_display
from tuner.workload import workload_sha256


def measure_command(cfg: StudyConfig, settings: Settings, *, config: dict[str, Any],
                    defaults: bool, repeats: int, console: Console,
                    progress_console: Console, engine_factory: EngineFactory = real_engines,
                    against: Side | None = None, resolution: float = RESOLUTION,
                    name: str = "the configuration", resume: bool = False) -> MeasureReport:
    """``repeats`` fresh starts of ``config``, or, ``against`` another configuration,
    ``repeats`` pairs of interleaved fresh starts of both and the verdict of the pairs.
    ``resume``: go on from the measurement in ``cfg``'s folder (:mod:`measure_record`)."""
    t0 = time.monotonic()
    a = Side(name="defaults" if defaults else name, config=config, defaults=defaults)
    sha, machine = workload_sha256(cfg.workload), cpu_identity()
    earlier, done = None, list[TrialResult]()
    if resume:
        earlier, earlier_model = earlier_measurement(cfg.run_dir)
        done = starts_to_keep(earlier, earlier_model, cfg.run_dir, engine=cfg.engine,
                              model=cfg.model, workload=cfg.workload, workload_sha=sha, a=a,
                              b=against, repeats=repeats)
    prep = prepare(cfg, settings, engine_factory)
    for knobs, flag in ((config, "--config"), (against.config if against else {}, "--against")):
        check_config(knobs, flag, prep.spec, prep.hardware, prep.model,
                     prep.workload.max_request_tokens())
    if earlier is not None:
        check_machine(earlier, cfg.run_dir, hardware=prep.hardware.describe(), machine=machine)
    prep.start_tracking()
    starts = repeats * (2 if against else 1)
    out = cfg.folder.measure
    run = RunFacts(workload_sha256=sha, machine=machine, planned=repeats,
                   looks=looks_after(earlier, repeats, against is not None),
                   resumed=(earlier.resumed + 1) if earlier else 0)

    def report_of(results: list[TrialResult], *, complete: bool) -> MeasureReport:
        return measure_report(prep, cfg, a, against, results, resolution, run,
                              complete=complete, wall_s=(earlier.wall_s if earlier else 0.0)
                              + time.monotonic() - t0)

    def keep(results: list[TrialResult]) -> None:
        write_report(out, report_of(results, complete=False))

    with guarded(prep.launcher), running_on(prep.hardware.client_cpus,
                                                 realtime=prep.hardware.client_realtime), \
            progress_display(console, progress_console) as progress:
        what = "defaults" if defaults else config
        if against is not None:
            what = f"{a.name} against {against.name}, {repeats} pairs"
        go_on = (f"; {len(done)} of them measured before, in {cfg.run_dir}"
                 if earlier is not None else "")
        progress.status("measure", f"{prep.spec.display_name} {prep.engine_version}, "
                        f"{what}, {starts} fresh starts{go_on}")
        ctx = prep.context(progress)
        if against is None:
            results = measure_repeats(ctx, config, defaults=defaults, repeats=repeats,
                                      tracker=prep.tracker, done=done, keep=keep)
        else:
            results = measure_pairs(ctx, a, against, pairs=repeats, tracker=prep.tracker,
                                    done=done, keep=keep)
    report = report_of(results, complete=True)
    write_report(out, report)
    sides, mine = report.sides, [r for r, s in zip(results, report.sides, strict=True)
                                 if s == a.name]
    kept = None if report.start_spread is None else save_noise_record(
        settings.cache_dir, report.start_spread, engine=prep.spec.name,
        engine_version=prep.engine_version, host=report.hardware, workload=cfg.workload.name,
        start_s=statistics.median(r.timing.wall_s for r in results))
    v = report.verdict
    prep.tracker.finish_study(
        metrics={k: val for k, val in {
            "capacity_mean": report.capacity.mean if report.capacity else None,
            "capacity_cv": report.capacity.cv if report.capacity else None,
            "cost_mean": report.cost.mean if report.cost else None,
            "cost_cv": report.cost.cv if report.cost else None,
            "ratio": v.ratio if v else None, "ratio_low": v.low if v else None,
            "ratio_high": v.high if v else None,
            "resolution": resolution if against else None}.items() if val is not None},
        artifacts=[("", out)], texts={},
        tags={"verdict": report.verdict_line} if report.verdict_line else None)
    console.print(measure_table(report.repeats, sides if against else None,
                                title=f"{prep.spec.display_name} on {report.hardware}"))
    label = f"{a.name}: " if against else ""
    for line in spread_lines(report.capacity, report.cost, prep.workload.arrival.unit):
        console.print(label + line, highlight=False)
    if report.bounds:
        console.print(f"{report.bounds} of {len(mine)} starts found no load that failed: "
                      "their capacity is a lower bound, left out of the spread; raise "
                      "capacity.max_load or capacity.max_steps", highlight=False)
    if report.start_spread is not None:
        console.print(f"start-to-start CV of capacity: {report.start_spread.text()}",
                      highlight=False)
        console.print(f"kept as this host's noise for {prep.spec.name} {prep.engine_version} "
                      f"(studies here start from it when they pool too few starts): {kept}",
                      highlight=False)
    for why in report.left_out:
        console.print(f"left out of the verdict: {why}", highlight=False)
    if report.verdict_line:
        console.print(report.verdict_line, highlight=False)
    if against is not None and run.looks > 1:
        console.print(f"(its interval shares the 95% level over {run.looks} looks: the verdicts "
                      "read before this one, when the measurement was taken further)",
                      highlight=False)
    if against is not None and (report.verdict is None or report.verdict.kind == "unresolved"):
        console.print(f"more pairs: the same command with --resume {cfg.run_dir} --repeats "
                      f"{2 * repeats} goes on from these", highlight=False)
    console.print(f"{len([r for r in results if r.feasible])} of {starts} starts met the SLOs; "
                  f"{report.wall_s:.0f}s in all; figures in {out}")
    return report


@dataclass(frozen=True)
class RunFacts:
    """What every report of one run says alike: the workload file's hash, the CPU, the plan
    and the looks (:mod:`tuner.commands.measure_record`)."""

    workload_sha256: str | None
    machine: str
    planned: int
    looks: int
    resumed: int


def measure_report(prep: Prepared, cfg: StudyConfig, a: Side, against: Side | None,
                   results: list[TrialResult], resolution: float, run: RunFacts, *,
                   complete: bool, wall_s: float) -> MeasureReport:
    """The report of the starts measured so far (all of them once the run ends)."""
    sides = ([a.name] * len(results) if against is None else
             [(a, against)[w].name for w in interleaved(run.planned)][:len(results)])
    mine = [r for r, side in zip(results, sides, strict=True) if side == a.name]
    paired = (paired_outcome(results, resolution, looks=run.looks) if against is not None
              else None)
    bracketed = [r for r in mine if not r.capacity_bound]
    return MeasureReport(
        engine=prep.spec.name, engine_version=prep.engine_version, workload=str(cfg.workload),
        workload_sha256=run.workload_sha256, model=cfg.model,
        hardware=prep.hardware.describe(), machine=run.machine,
        config=mine[0].config if mine else a.config,
        defaults=a.defaults, repeats=results, sides=sides,
        capacity=spread([r.max_load for r in bracketed if r.max_load is not None]),
        cost=spread([r.cost_per_m_output_tokens for r in bracketed
                     if r.cost_per_m_output_tokens is not None]),
        bounds=len(mine) - len(bracketed),
        against=None if against is None else against.config,
        against_defaults=None if against is None else against.defaults,
        verdict=paired.verdict if paired else None,
        verdict_line=verdict_line(paired, a, against) if paired and against else None,
        left_out=paired.left_out if paired else [],
        start_spread=floored(pooled_spread(capacities_by_side(results, sides)),
                             results_floor(results)),
        wall_s=wall_s, complete=complete, planned=run.planned, looks=run.looks,
        resumed=run.resumed)


def write_report(out: Path, report: MeasureReport) -> None:
    """measure.json, replaced whole (a reader never sees half a file)."""
    part = out.with_suffix(".json.part")
    part.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    part.replace(out)


def capacities_by_side(results: list[TrialResult], sides: list[str]) -> list[list[float]]:
    """Each configuration's bracketed capacities, the starts that met the SLOs."""
    return [[r.max_load for r, side in zip(results, sides, strict=True)
             if side == name and r.feasible and not r.capacity_bound and r.max_load is not None]
            for name in dict.fromkeys(sides)]


def verdict_line(paired: PairedOutcome, a: Side, b: Side) -> str:
    """The comparison's one line; when no pair counted, why."""
    if paired.verdict is None:
        return (f"unresolved: no pair of {a.name} and {b.name} had both starts meet the SLOs "
                "with a bracketed capacity")
    return paired.verdict.sentence(a.name, b.name)


def exit_code(report: MeasureReport) -> int:
    """0: the configuration beats the one it was measured against; EXIT_NO_GAIN: it does
    not by more than the resolution (equivalent, or worse); EXIT_UNRESOLVED: not decided."""
    kind = report.verdict.kind if report.verdict else "unresolved"
    return {"better": 0, "unresolved": EXIT_UNRESOLVED}.get(kind, EXIT_NO_GAIN)
