"""``tune measure``: one configuration, started N times, its capacity and cost each time.

Users run it to learn how noisy their setup is before a study. Each repeat is a fresh start
of the configuration, exactly what a trial of a study does (:mod:`tuner.study.repeats`: start,
readiness, warm-up, capacity search, interpolated capacity and its cost); the spread across
repeats is the measurement's noise. This command parses, prints and keeps the report.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console

from tuner.commands.named_config import check_config
from tuner.commands.prepare import EngineFactory, prepare, real_engines
from tuner.core import EXIT_NO_GAIN, EXIT_UNRESOLVED, RESOLUTION, Settings
from tuner.host import running_on
from tuner.launch import guarded
from tuner.metrics import PooledSpread, RatioVerdict, Spread, floored, pooled_spread, spread
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


class MeasureReport(BaseModel):
    engine: str
    engine_version: str
    workload: str
    hardware: str
    config: dict[str, Any]
    defaults: bool
    repeats: list[TrialResult]
    sides: list[str] = Field(default_factory=list, description="which configuration each "
                             "start measured (paired: the two names, interleaved)")
    capacity: Spread | None
    """Over the starts whose capacity was bracketed (a bound has no place in a mean or CV)."""
    cost: Spread | None
    bounds: int = 0
    """Starts whose capacity is only a lower bound (nothing failed): left out of the spread."""
    against: dict[str, Any] | None = None
    against_defaults: bool | None = None
    verdict: RatioVerdict | None = None
    """Paired: the interval of the configuration's advantage (the other's cost over its)."""
    verdict_line: str | None = None
    start_spread: PooledSpread | None = None
    """The start-to-start spread of capacity, pooled over the configurations measured (one-way:
    within each), with its upper 95% bound: this host and engine's noise floor."""
    left_out: list[str] = Field(default_factory=list, description="pairs the verdict could "
                                "not count, with why")
    wall_s: float


def measure_command(cfg: StudyConfig, settings: Settings, *, config: dict[str, Any],
                    defaults: bool, repeats: int, console: Console,
                    progress_console: Console, engine_factory: EngineFactory = real_engines,
                    against: Side | None = None, resolution: float = RESOLUTION,
                    name: str = "the configuration") -> MeasureReport:
    """``repeats`` fresh starts of ``config``, or, ``against`` another configuration,
    ``repeats`` pairs of interleaved fresh starts of both and the verdict of the pairs."""
    t0 = time.monotonic()
    prep = prepare(cfg, settings, engine_factory)
    for knobs, flag in ((config, "--config"), (against.config if against else {}, "--against")):
        check_config(knobs, flag, prep.spec, prep.hardware, prep.model,
                     prep.workload.max_request_tokens())
    prep.start_tracking()
    a = Side(name="defaults" if defaults else name, config=config, defaults=defaults)
    starts = repeats * (2 if against else 1)
    with guarded(prep.launcher), running_on(prep.hardware.client_cpus,
                                                 realtime=prep.hardware.client_realtime), \
            progress_display(console, progress_console) as progress:
        what = "defaults" if defaults else config
        if against is not None:
            what = f"{a.name} against {against.name}, {repeats} pairs"
        progress.status("measure", f"{prep.spec.display_name} {prep.engine_version}, "
                        f"{what}, {starts} fresh starts")
        ctx = prep.context(progress)
        if against is None:
            results = measure_repeats(ctx, config, defaults=defaults, repeats=repeats,
                                      tracker=prep.tracker)
        else:
            results = measure_pairs(ctx, a, against, pairs=repeats, tracker=prep.tracker)
    sides = ([a.name] * len(results) if against is None else
             [(a, against)[w].name for w in interleaved(repeats)][:len(results)])
    mine = [r for r, side in zip(results, sides, strict=True) if side == a.name]
    paired = paired_outcome(results, resolution) if against is not None else None
    bracketed = [r for r in mine if not r.capacity_bound]
    report = MeasureReport(
        engine=prep.spec.name, engine_version=prep.engine_version, workload=str(cfg.workload),
        hardware=prep.hardware.describe(), config=mine[0].config if mine else config,
        defaults=defaults, repeats=results, sides=sides,
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
        wall_s=time.monotonic() - t0)
    out = cfg.folder.measure
    out.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
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
    console.print(f"{len([r for r in results if r.feasible])} of {starts} starts met the SLOs; "
                  f"{time.monotonic() - t0:.0f}s in all; figures in {out}")
    return report


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
