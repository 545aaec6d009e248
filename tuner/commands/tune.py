"""``tune --engine E --workload W``: the whole study, end to end."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from rich.console import Console

from tuner import __version__
from tuner.commands.prepare import prepare
from tuner.commands.progress_display import progress_display
from tuner.commands.teardown import guarded
from tuner.engines.render import render
from tuner.engines.spec import Device, EngineSpec
from tuner.errors import ConfigError
from tuner.hardware import running_on
from tuner.report.study_report import best_config_yaml, final_table, study_verdict, write_plots
from tuner.search.outcome import TrialResult, cheapest, defaults_trial, ranked
from tuner.search.remeasure import RemeasureOutcome, remeasure
from tuner.search.study import StudyProgress, results_summary, run_search
from tuner.search.study_config import StudyConfig
from tuner.search.study_summary import StudySummary, TimeSplit, noise_floor
from tuner.settings import Settings
from tuner.validation import load_yaml
from tuner.workload.loader import workload_sha256

log = logging.getLogger(__name__)


def ready_command(spec: EngineSpec, trial: TrialResult | None, model: str, served: str,
                  device: Device) -> str | None:
    """The winner's launch, ready to paste: the usual port, listening on all interfaces."""
    if trial is None or spec.process is None:
        return None
    return render(spec, {} if trial.defaults else trial.config, device=device, mode="process",
                  values={"python": "python", "model": model, "served_name": served,
                          "port": "8000", "host": "0.0.0.0"}).command_line()


def tune_command(cfg: StudyConfig, settings: Settings, console: Console,
                 progress_console: Console) -> StudySummary:
    t_start = time.monotonic()
    prep = prepare(cfg, settings)
    spec, hw, tracker, eng_version = prep.spec, prep.hardware, prep.tracker, prep.engine_version
    state = StudyProgress()
    with guarded(prep.launcher), running_on(hw.client_cpus, realtime=hw.client_realtime), \
            progress_display(console, progress_console) as progress:
        if prep.removed:
            progress.note(f"removed {len(prep.removed)} orphaned engine(s) of an earlier run")
        progress.status("study", f"{cfg.name}: {spec.display_name} {eng_version} on "
                        f"{hw.describe()}")
        ctx = prep.context(progress)
        study = run_search(cfg, ctx, tracker, state, start_tracking=prep.start_tracking)
        rm: RemeasureOutcome | None = None
        if cfg.remeasure_top > 0:
            rm = remeasure(ctx, state.results, top=cfg.remeasure_top,
                           repeats=cfg.remeasure_repeats, seed=cfg.seed)
    wall = time.monotonic() - t_start
    launched = state.own  # the time split is this process's; other workers' are their own
    startup = sum(r.timing.startup_s for r in launched) + (rm.timing.startup_s if rm else 0)
    measure = sum(r.timing.measure_s for r in launched) + (rm.timing.measure_s if rm else 0)
    teardown = sum(r.timing.teardown_s for r in launched) + (rm.timing.teardown_s if rm else 0)
    split = TimeSplit(wall_s=wall, startup_s=startup, measure_s=measure, teardown_s=teardown,
                      tuner_s=max(0.0, wall - startup - measure - teardown))
    defaults = defaults_trial(state.results)
    best = cheapest(state.results)
    winner = rm.winner if rm else None
    best_trial = next((r for r in state.results if winner and r.number == winner.trial), best)
    floor = noise_floor(defaults, rm.defaults if rm else None)
    summary = StudySummary(
        study=cfg.name, engine=spec.name, engine_version=eng_version, model=cfg.model,
        workload=str(cfg.workload), workload_sha256=workload_sha256(cfg.workload),
        hardware=hw.describe(), tuner_version=__version__,
        trials=results_summary(state.results), defaults_trial=defaults, best_trial=best_trial,
        remeasure=rm, tuning_delta=rm.tuning_delta if rm else None,
        noise_floor=floor,
        verdict=study_verdict(spec.display_name, rm, defaults, best, floor),
        best_config=(winner.config if winner else best.config if best else None),
        best_command=ready_command(spec, best_trial, cfg.model, prep.served_name, hw.device),
        time=split, time_shares=split.shares())
    out = cfg.run_dir / "summary.json"
    out.write_text(json.dumps(summary.model_dump(mode="json"), indent=2) + "\n")
    plots = write_plots(study, cfg.run_dir / "plots")
    tracker.finish_study(
        metrics={k: v for k, v in {
            "best_cost_per_m_output_tokens": (winner.cost.value if winner and winner.cost
                                              else best.cost_per_m_output_tokens if best
                                              else None),
            "tuning_delta": summary.tuning_delta.value if summary.tuning_delta else None,
            "startup_share": split.shares()["startup"],
            "measurement_share": split.shares()["measurement"],
            "tuner_share": split.shares()["tuner"], "wall_s": wall}.items() if v is not None},
        artifacts=[("", out), *(("plots", p) for p in plots.values())],
        texts={"best_config.yaml": best_config_yaml(spec.name, winner, best),
               "launch_command.sh": "#!/bin/sh\n" + (summary.best_command or "# none") + "\n"})
    console.print(final_table(summary))
    console.print(summary.verdict)
    if floor is not None:
        console.print(f"noise floor: {floor.value:.1%} ({floor.source}); smaller differences "
                      "are not resolved")
    shares = split.shares()
    console.print(f"time: {wall:.0f}s in all; start-up {shares['startup']:.0%}, measurement "
                  f"{shares['measurement']:.0%}, teardown {shares['teardown']:.0%}, tuner "
                  f"{shares['tuner']:.0%}")
    console.print(f"summary in {out}; MLflow: {cfg.tracking}")
    if summary.best_command:
        console.print(f"best launch command:\n  {summary.best_command}", soft_wrap=True)
    return summary


def parse_enqueue(path: Path | None) -> list[dict[str, object]]:
    if path is None:
        return []
    data = load_yaml(path)
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{path}: give a mapping of knob values, or a list of them")
    return items


WARM_START_TOP = 3


def warm_start_configs(study_dir: Path | None, engine: str) -> list[dict[str, object]]:
    """The best configurations of another study of ``engine`` (another workload or model),
    cheapest first, to try first: a study that starts where another ended."""
    if study_dir is None:
        return []
    config = study_dir / "config.json"
    if not config.is_file():
        raise ConfigError(f"--warm-start {study_dir}: not a study folder (no config.json); give "
                          "a folder tune wrote, such as tune-runs/<study>")
    theirs = json.loads(config.read_text()).get("engine")
    if theirs != engine:
        raise ConfigError(f"--warm-start {study_dir}: a study of {theirs!r}, not {engine!r}; "
                          f"give a study of {engine}")
    results = [TrialResult.model_validate_json(p.read_text())
               for p in sorted((study_dir / "trials").glob("trial-*.json"))]
    return [{k: v for k, v in r.config.items() if v is not None}
            for r in ranked(results) if not r.defaults][:WARM_START_TOP]

