"""The study loop: Optuna asks, a trial runs, Optuna is told; resumable from its storage.

Trial 0 is always the engine's defaults (so every study states its tuning delta).
Configurations rejected by a rule are told as infeasible without a launch and do
not count toward ``--trials`` (at most ``4 x trials`` of them are tried). Stale
RUNNING trials of a killed run are marked FAIL when the study resumes; finished
trials are kept, with their results in ``trials/trial-NNN.json``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from optuna.trial import TrialState

from tuner.errors import StudyError
from tuner.search.config import TuneConfig
from tuner.search.outcome import TrialResult
from tuner.search.trial import TrialContext, constraint_values, run_trial
from tuner.tracking.base import Tracker

log = logging.getLogger(__name__)

FAILED_COST = 1e6
"""Objective value told for infeasible trials (their constraints say why)."""


@dataclass
class StudyProgress:
    results: list[TrialResult] = field(default_factory=list)
    tuner_start: float = field(default_factory=time.monotonic)

    @property
    def feasible(self) -> list[TrialResult]:
        return sorted((r for r in self.results if r.feasible),
                      key=lambda r: r.cost_per_m_output_tokens or FAILED_COST)


def open_study(cfg: TuneConfig) -> optuna.Study:
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=cfg.seed, n_startup_trials=min(5, cfg.trials))
    try:
        return optuna.create_study(study_name=cfg.name, storage=cfg.storage_url,
                                   direction="minimize", sampler=sampler, load_if_exists=True)
    except Exception as exc:  # SQLAlchemy and storage errors have no common base we can name
        raise StudyError(f"cannot open study storage {cfg.storage_url}: {exc}") from exc


def _results_dir(cfg: TuneConfig) -> Path:
    path = cfg.run_dir / "trials"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_results(cfg: TuneConfig, study: optuna.Study) -> list[TrialResult]:
    """Results of the finished trials of earlier runs of this study."""
    out = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        path = _results_dir(cfg) / f"trial-{t.number:03d}.json"
        if path.is_file():
            out.append(TrialResult.model_validate_json(path.read_text()))
    return out


def recover(study: optuna.Study) -> int:
    """Mark trials left RUNNING by a killed run as FAIL; return how many."""
    stale = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for t in stale:
        study.tell(t.number, state=TrialState.FAIL)
    return len(stale)


def enqueue_first(study: optuna.Study, defaults: dict[str, object],
                  extra: list[dict[str, object]]) -> None:
    trials = study.get_trials(deepcopy=False)
    has_defaults = any(t.user_attrs.get("defaults") and t.state in (
        TrialState.COMPLETE, TrialState.WAITING) for t in trials)
    if not has_defaults:
        study.enqueue_trial(defaults, user_attrs={"defaults": True})
    for config in extra:
        study.enqueue_trial(config, user_attrs={"enqueued": config}, skip_if_exists=True)


def run_search(cfg: TuneConfig, ctx: TrialContext, tracker: Tracker,
               state: StudyProgress) -> optuna.Study:
    study = open_study(cfg)
    stale = recover(study)
    if stale:
        log.info("marked %d trial(s) of an interrupted run as failed", stale)
    state.results = load_results(cfg, study)
    defaults = ctx.space.clamp_defaults(ctx.spec.defaults(ctx.hardware.device))
    enqueue_first(study, defaults, cfg.enqueue)
    slo = ctx.workload.slo
    deadline = None if cfg.time_budget_s is None else time.monotonic() + cfg.time_budget_s
    rejected = 0

    def launched() -> int:
        return sum(not r.rejected_before_launch for r in state.results)

    while launched() < cfg.trials and rejected < 4 * cfg.trials:
        if deadline is not None and time.monotonic() >= deadline:
            ctx.progress.note("time budget spent; no new trials")
            break
        trial = study.ask()
        is_default = bool(trial.user_attrs.get("defaults"))
        config = ctx.space.sample(trial)
        # Enqueued knobs outside the search space still go to the engine.
        config.update({k: v for k, v in trial.user_attrs.get("enqueued", {}).items()
                       if k not in config and k in ctx.spec.knobs})
        ctx.progress.status("trial", f"{launched() + 1} of {cfg.trials} (optuna #{trial.number})"
                            + (", engine defaults" if is_default else ""))
        try:
            result = run_trial(ctx, trial.number, config, defaults=is_default)
        except BaseException:
            study.tell(trial, state=TrialState.FAIL)
            raise
        rejected += result.rejected_before_launch
        (_results_dir(cfg) / f"trial-{trial.number:03d}.json").write_text(
            result.model_dump_json(indent=2))
        for key, value in constraint_values(result, slo.ttft_p95_ms, slo.itl_p95_ms,
                                            slo.max_error_rate).items():
            trial.set_constraint(key, value)
        trial.set_user_attr("outcome", result.outcome)
        trial.set_user_attr("detail", result.detail[:500])
        trial.set_user_attr("max_load", result.max_load)
        study.tell(trial, result.cost_per_m_output_tokens if result.feasible else FAILED_COST)
        state.results.append(result)
        tracker.log_trial(result)
        ctx.progress.note(result.line())
        best = state.feasible[:1]
        if best:
            ctx.progress.status("best", f"${best[0].cost_per_m_output_tokens:.4g}/M output "
                                f"tokens (trial {best[0].number})")
    return study


def results_summary(results: list[TrialResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        key = "rejected_before_launch" if r.rejected_before_launch else r.outcome
        counts[key] = counts.get(key, 0) + 1
    return counts


def dump_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
