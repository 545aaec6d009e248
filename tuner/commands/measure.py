"""``tune measure``: one configuration, started N times, its capacity and cost each time.

Users run it to learn how noisy their setup is before a study. Each repeat is a fresh start
of the configuration, exactly what a trial of a study does (:mod:`tuner.study.repeats`: start,
readiness, warm-up, capacity search, interpolated capacity and its cost); the spread across
repeats is the measurement's noise. This command parses, prints and keeps the report.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from tuner.commands.prepare import EngineFactory, prepare, real_engines
from tuner.core import ConfigError, Settings, load_yaml
from tuner.host import running_on
from tuner.launch import guarded
from tuner.metrics import Spread, spread
from tuner.report import measure_table, spread_lines
from tuner.study import RunFolder, StudyConfig, TrialResult
from tuner.study.repeats import measure_repeats
from tuner.ui import progress_display


class MeasureReport(BaseModel):
    engine: str
    engine_version: str
    workload: str
    hardware: str
    config: dict[str, Any]
    defaults: bool
    repeats: list[TrialResult]
    capacity: Spread | None
    """Over the starts whose capacity was bracketed (a bound has no place in a mean or CV)."""
    cost: Spread | None
    bounds: int = 0
    """Starts whose capacity is only a lower bound (nothing failed): left out of the spread."""
    wall_s: float


def config_to_measure(config: str, study_dir: Path | None, trial: int | None
                      ) -> tuple[dict[str, Any], bool]:
    """The knobs to measure and whether they are the engine's defaults."""
    if trial is not None:
        if study_dir is None:
            raise ConfigError("--trial needs --study-dir, the folder of the study it is from")
        path = RunFolder(study_dir).trial(trial)
        if not path.is_file():
            raise ConfigError(f"{path} not found: give a trial number the study has finished")
        found = TrialResult.model_validate_json(path.read_text())
        return ({} if found.defaults else found.config), found.defaults
    if config == "defaults":
        return {}, True
    data = load_yaml(Path(config))
    if not isinstance(data, dict):
        raise ConfigError(f"{config}: give a mapping of knob values (or a study's "
                          "best_config.yaml)")
    if isinstance(data.get("config"), dict):  # a best_config.yaml a study wrote
        chosen = bool(data.get("defaults"))
        return ({} if chosen else data["config"]), chosen
    return data, False


def measure_command(cfg: StudyConfig, settings: Settings, *, config: dict[str, Any],
                    defaults: bool, repeats: int, console: Console,
                    progress_console: Console, engine_factory: EngineFactory = real_engines
                    ) -> MeasureReport:
    t0 = time.monotonic()
    prep = prepare(cfg, settings, engine_factory)
    prep.start_tracking()
    unknown = sorted(set(config) - set(prep.spec.knobs))
    if unknown:
        raise ConfigError(f"{prep.spec.name} has no knob {unknown[0]!r}; the knobs are in "
                          f"engines/{prep.spec.name}.yaml")
    with guarded(prep.launcher), running_on(prep.hardware.client_cpus,
                                                 realtime=prep.hardware.client_realtime), \
            progress_display(console, progress_console) as progress:
        progress.status("measure", f"{prep.spec.display_name} {prep.engine_version}, "
                        f"{'defaults' if defaults else config}, {repeats} fresh starts")
        results = measure_repeats(prep.context(progress), config, defaults=defaults,
                                  repeats=repeats, tracker=prep.tracker)
    bracketed = [r for r in results if not r.capacity_bound]
    report = MeasureReport(
        engine=prep.spec.name, engine_version=prep.engine_version, workload=str(cfg.workload),
        hardware=prep.hardware.describe(), config=results[0].config if results else config,
        defaults=defaults, repeats=results,
        capacity=spread([r.max_load for r in bracketed if r.max_load is not None]),
        cost=spread([r.cost_per_m_output_tokens for r in bracketed
                     if r.cost_per_m_output_tokens is not None]),
        bounds=len(results) - len(bracketed),
        wall_s=time.monotonic() - t0)
    out = cfg.folder.measure
    out.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    prep.tracker.finish_study(
        metrics={k: v for k, v in {
            "capacity_mean": report.capacity.mean if report.capacity else None,
            "capacity_cv": report.capacity.cv if report.capacity else None,
            "cost_mean": report.cost.mean if report.cost else None,
            "cost_cv": report.cost.cv if report.cost else None}.items() if v is not None},
        artifacts=[("", out)], texts={})
    console.print(measure_table(report.repeats,
                                title=f"{prep.spec.display_name} on {report.hardware}"))
    for line in spread_lines(report.capacity, report.cost, prep.workload.arrival.unit):
        console.print(line)
    if report.bounds:
        console.print(f"{report.bounds} of {repeats} starts found no load that failed: their "
                      "capacity is a lower bound, left out of the spread; raise "
                      "capacity.max_load or capacity.max_steps", highlight=False)
    console.print(f"{len([r for r in results if r.feasible])} of {repeats} starts met the SLOs; "
                  f"{time.monotonic() - t0:.0f}s in all; figures in {out}")
    return report
