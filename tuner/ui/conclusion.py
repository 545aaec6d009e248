"""What a study ends with, on each process that ends it (``tune``, and ``tune worker`` when
the study re-measures): ``summary.json``, Optuna's plots and the final table, from every
worker's trials and re-measured starts; the time split is this process's own. The study's
MLflow parent run gets its figures once per study: from the process that takes the
re-measurement's summary unit, or from ``tune`` when nothing is re-measured."""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

import optuna
from rich.console import Console

from tuner import __version__
from tuner.core import without_password
from tuner.engines import Device, EngineSpec, render
from tuner.host import Hardware, write_atomic
from tuner.metrics import money
from tuner.report import (
    baseline_text,
    best_config_yaml,
    final_table,
    study_verdict,
    tradeoff_plot,
    write_plots,
)
from tuner.study import (
    StudyConfig,
    StudyProgress,
    TrialResult,
    baseline_trial,
    cheapest,
    defaults_trial,
    results_summary,
)
from tuner.study.coordination import spend_of
from tuner.study.repeats import Remeasurement
from tuner.study.results import (
    NoiseRecord,
    StudySummary,
    TimeSplit,
    noise_floor,
    pareto_front,
    tradeoff_points,
)
from tuner.tracking import MlflowTracker, review_line
from tuner.workload import Workload, workload_sha256


class PreparedStudy(Protocol):
    """What the end of a study needs of the study the composition root prepared
    (:class:`tuner.commands.prepare.Prepared`)."""

    cfg: StudyConfig
    workload: Workload
    spec: EngineSpec
    hardware: Hardware
    tracker: MlflowTracker
    served_name: str
    engine_version: str
    noise: NoiseRecord | None


def ready_command(spec: EngineSpec, trial: TrialResult | None, model: str, served: str,
                  device: Device) -> str | None:
    """The winner's launch, ready to paste: the usual port, listening on all interfaces."""
    if trial is None or spec.process is None:
        return None
    return render(spec, {} if trial.defaults else trial.config, device=device, mode="process",
                  values={"python": "python", "model": model, "served_name": served,
                          "port": "8000", "host": "0.0.0.0"}).command_line()


def lossy_unchecked(spec: EngineSpec, trial: TrialResult | None, *, checked: bool,
                    device: Device) -> str:
    """The lossy knobs the chosen configuration changes when no quality check looked at them
    (``checked``: the workload has ``quality``); empty otherwise."""
    if trial is None or trial.defaults or checked:
        return ""
    return ", ".join(f"{k}={v}" for k, v in spec.lossy_changes(trial.config, device).items())


def conclude(prep: PreparedStudy, state: StudyProgress, study: optuna.Study,
             finished: Remeasurement | None, t_start: float, console: Console
             ) -> StudySummary:
    cfg, spec, hw, tracker = prep.cfg, prep.spec, prep.hardware, prep.tracker
    rm = finished.outcome if finished else None
    wall = time.monotonic() - t_start
    launched = state.own  # the time split is this process's; other workers' are their own
    startup = sum(r.timing.startup_s for r in launched) + (rm.timing.startup_s if rm else 0)
    measure = sum(r.timing.measure_s for r in launched) + (rm.timing.measure_s if rm else 0)
    teardown = sum(r.timing.teardown_s for r in launched) + (rm.timing.teardown_s if rm else 0)
    split = TimeSplit(wall_s=wall, startup_s=startup, measure_s=measure, teardown_s=teardown,
                      tuner_s=max(0.0, wall - startup - measure - teardown))
    defaults = defaults_trial(state.results)
    baseline = baseline_trial(state.results)
    best = cheapest(state.results)
    winner = rm.winner if rm else None
    best_trial = next((r for r in state.results if winner and r.number == winner.trial), best)
    floor = noise_floor(defaults, rm.defaults if rm else None,
                        rm.start_spread if rm else None, prep.noise)
    points = tradeoff_points(state.results)
    front = pareto_front(points)
    summary = StudySummary(
        study=cfg.name, engine=spec.name, engine_version=prep.engine_version, model=cfg.model,
        workload=str(cfg.workload), workload_sha256=workload_sha256(cfg.workload),
        hardware=hw.describe(), tuner_version=__version__,
        trials=results_summary(state.results), defaults_trial=defaults, best_trial=best_trial,
        remeasure=rm, tuning_delta=rm.tuning_delta if rm else None,
        noise_floor=floor,
        verdict=study_verdict(spec.display_name, rm, defaults, best, floor),
        verdict_kind=rm.study_verdict if rm else None, comparison=rm.paired if rm else None,
        baseline_trial=baseline,
        baseline_verdict=baseline_text(spec.display_name, rm, baseline, best),
        best_config=(winner.config if winner else best.config if best else None),
        best_command=ready_command(spec, best_trial, cfg.model, prep.served_name, hw.device),
        time=split, time_shares=split.shares(), pareto=front,
        spend_usd=spend_of(state.results, prep.workload.cost).usd)
    out = cfg.folder.summary
    write_atomic(out, json.dumps(summary.model_dump(mode="json"), indent=2) + "\n")
    plots = write_plots(study, cfg.folder)
    if front:
        slo = prep.workload.slo
        plots["pareto"] = tradeoff_plot(points, front, cfg.folder.plot("pareto"),
                                        {m.key: b for m, b in slo.bounds().items()
                                         if m.objective})
    texts = {"best_config.yaml": best_config_yaml(spec.name, winner, best),
             "launch_command.sh": "#!/bin/sh\n" + (summary.best_command or "# none") + "\n"}
    for name, text in texts.items():  # beside summary.json, for tune measure --config
        write_atomic(out.parent / name, text)
    turn: AbstractContextManager[bool] = (finished.summary_turn() if finished
                                          else nullcontext(True))
    c = summary.comparison
    with turn as ours:
        if ours:
            tracker.finish_study(
                metrics={k: v for k, v in {
                    "best_cost_per_m_output_tokens": (
                        winner.cost.value if winner and winner.cost
                        else best.cost_per_m_output_tokens if best else None),
                    "tuning_delta": summary.tuning_delta.value if summary.tuning_delta else None,
                    "startup_share": split.shares()["startup"],
                    "measurement_share": split.shares()["measurement"],
                    "tuner_share": split.shares()["tuner"], "wall_s": wall,
                    "ratio": c.ratio if c else None, "ratio_low": c.low if c else None,
                    "ratio_high": c.high if c else None,
                    "resolution": c.resolution if c else None}.items()
                    if v is not None},
                tags={"verdict": summary.verdict,
                      **({"verdict_kind": summary.verdict_kind} if summary.verdict_kind
                         else {})},
                artifacts=[("", out), *(("plots", p) for p in plots.values())],
                starts=rm.runs if rm else (),
                texts=texts)
    console.print(final_table(summary))
    console.print(summary.verdict)
    if summary.baseline_verdict:
        console.print(summary.baseline_verdict)
    if floor is not None:
        console.print(f"noise floor: {floor.value:.1%} ({floor.source}); smaller differences "
                      "are not resolved")
    shares = split.shares()
    console.print(f"time: {wall:.0f}s in all; start-up {shares['startup']:.0%}, measurement "
                  f"{shares['measurement']:.0%}, teardown {shares['teardown']:.0%}, tuner "
                  f"{shares['tuner']:.0%}")
    shown = without_password(cfg.tracking)
    console.print(f"summary in {out}; MLflow: {shown}")
    console.print(review_line(shown, tracker.runs_page()), soft_wrap=True,
                  highlight=False)
    unchecked = lossy_unchecked(spec, best_trial, checked=prep.workload.quality is not None,
                                device=hw.device)
    if unchecked:
        console.print(f"the best configuration changes lossy knobs ({unchecked}); its answers "
                      "were not compared with the defaults': give the workload quality: "
                      "{min_token_agreement: 0.95} to check them", soft_wrap=True,
                      highlight=False)
    if summary.spend_usd is not None:
        console.print(f"accelerator spend of the search: {money(summary.spend_usd)}",
                      highlight=False)
    if len(front) > 1:
        console.print(f"trade-offs: {len(front)} configurations on the Pareto front of cost "
                      f"against latency: tune report --dir {cfg.run_dir}; deploy one with tune "
                      f"export --study {cfg.run_dir} --format docker --pick ...", soft_wrap=True,
                      highlight=False)
    if summary.best_command:
        console.print(f"best launch command:\n  {summary.best_command}", soft_wrap=True)
    return summary
