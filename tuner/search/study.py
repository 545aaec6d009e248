"""The study loop: Optuna asks, a trial runs, Optuna is told; resumable from its storage.

Trial 0 is always the engine's defaults (so every study states its tuning delta).
Configurations rejected by a rule are told as infeasible without a launch and do
not count toward ``--trials`` (at most ``4 x trials`` of them are tried). Stale
RUNNING trials of a killed run are marked FAIL when the study resumes; finished
trials are kept, with their results in ``trials/trial-NNN.json``.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.errors import StudyError
from tuner.metrics.cost import money
from tuner.search.outcome import TrialResult, ranked
from tuner.search.samplers import make_sampler
from tuner.search.study_config import StudyConfig
from tuner.search.tracker import Tracker
from tuner.search.trial import TrialContext, constraint_values, run_trial

log = logging.getLogger(__name__)

FAILED_COST = 1e6
"""Objective value told for infeasible trials (their constraints say why)."""


@dataclass
class StudyProgress:
    results: list[TrialResult] = field(default_factory=list)
    tuner_start: float = field(default_factory=time.monotonic)

    @property
    def feasible(self) -> list[TrialResult]:
        return ranked(self.results)


def open_study(cfg: StudyConfig) -> optuna.Study:
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = make_sampler(cfg.sampler, seed=cfg.seed, trials=cfg.trials)
    try:
        return optuna.create_study(study_name=cfg.name, storage=cfg.storage_url,
                                   direction="minimize", sampler=sampler, load_if_exists=True)
    except Exception as exc:  # SQLAlchemy and storage errors have no common base we can name
        raise StudyError(f"cannot open study storage {cfg.storage_url}: {exc}") from exc


def _results_dir(cfg: StudyConfig) -> Path:
    path = cfg.run_dir / "trials"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_results(cfg: StudyConfig, study: optuna.Study) -> list[TrialResult]:
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


def run_search(cfg: StudyConfig, ctx: TrialContext, tracker: Tracker,
               state: StudyProgress) -> optuna.Study:
    study = open_study(cfg)
    stale = recover(study)
    if stale:
        log.info("marked %d trial(s) of an interrupted run as failed", stale)
    state.results = load_results(cfg, study)
    enqueue_first(study, ctx.space.legal_defaults(ctx.defaults_config()), cfg.enqueue)
    search = _Search(cfg, ctx, tracker, state, study)
    if cfg.parallel <= 1:
        search.worker(0)
        return study
    with ThreadPoolExecutor(max_workers=cfg.parallel, thread_name_prefix="trial") as pool:
        futures = [pool.submit(search.worker, i) for i in range(cfg.parallel)]
        try:
            for future in futures:
                future.result()
        except BaseException:
            search.stopping.set()
            ctx.stop_all()  # wakes every worker: their engines are gone
            wait(futures, timeout=120)
            raise
    return study


class _Search:
    """Ask, run, tell; shared by the workers of a parallel study (ask/tell under a lock)."""

    def __init__(self, cfg: StudyConfig, ctx: TrialContext, tracker: Tracker,
                 state: StudyProgress, study: optuna.Study) -> None:
        self.cfg, self.ctx, self.tracker, self.state, self.study = cfg, ctx, tracker, state, study
        self.deadline = (None if cfg.time_budget_s is None
                         else time.monotonic() + cfg.time_budget_s)
        self.rejected = 0
        self.running = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def launched(self) -> int:
        return sum(r.starts for r in self.state.results if not r.rejected_before_launch)

    def _next(self) -> tuple[optuna.Trial, dict[str, Any], bool] | None:
        with self.lock:
            cfg = self.cfg
            if (self.stopping.is_set() or self.launched() + self.running >= cfg.trials
                    or self.rejected >= 4 * cfg.trials):
                return None
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.ctx.progress.note("time budget spent; no new trials")
                return None
            trial = self.study.ask()
            is_default = bool(trial.user_attrs.get("defaults"))
            if is_default:  # Optuna is told only the defaults that are points of the space
                config = self.ctx.space.tell_defaults(trial, self.ctx.defaults_config())
            else:
                config = self.ctx.space.sample(trial)
                # Enqueued knobs outside the search space still go to the engine.
                config.update({k: v for k, v in trial.user_attrs.get("enqueued", {}).items()
                               if k not in config and k in self.ctx.spec.knobs})
            self.running += 1
            self.ctx.progress.status(
                "trial", f"{self.launched() + self.running} of {cfg.trials} (optuna "
                f"#{trial.number})" + (", engine defaults" if is_default else ""))
            return trial, config, is_default

    def worker(self, index: int) -> None:
        while (job := self._next()) is not None:
            trial, config, is_default = job
            try:
                result = run_trial(self.ctx, trial.number, config, defaults=is_default)
                if self._challenges(result):
                    try:
                        result = self._confirm(result, config)
                    finally:
                        with self.lock:
                            self.running -= 1
            except BaseException:
                with self.lock:
                    self.running -= 1
                    self.study.tell(trial, state=TrialState.FAIL)
                raise
            with self.lock:
                self.running -= 1
                self._tell(trial, result)

    def _challenges(self, result: TrialResult) -> bool:
        """With intensification: ``result`` beats the incumbent and the budget allows another
        start (which is then reserved)."""
        with self.lock:
            best = self.state.feasible[:1]
            if not (self.cfg.intensify and result.feasible and result.cost_per_m_output_tokens
                    is not None and (not best or result.cost_per_m_output_tokens
                                     < (best[0].cost_per_m_output_tokens or float("inf")))):
                return False
            if self.launched() + self.running + 1 > self.cfg.trials:
                return False
            self.running += 1
            return True

    def _confirm(self, first: TrialResult, config: dict[str, Any]) -> TrialResult:
        """Measure a challenger again on a fresh start: it leads on the mean of both starts,
        and only if it met the SLOs on both (a lucky start must not win the study)."""
        assert first.cost_per_m_output_tokens is not None
        assert first.max_load is not None
        self.ctx.progress.note(f"{first.line()}; beats the incumbent: measured again")
        again = run_trial(self.ctx, first.number, config, defaults=first.defaults,
                          tag=f"trial-{first.number:03d}-again")
        costs = [first.cost_per_m_output_tokens]
        if not again.feasible or again.cost_per_m_output_tokens is None:
            return again.model_copy(update={
                "starts": 2, "costs": costs,
                "detail": f"met the SLOs on its first start, not on its second: {again.detail}"})
        costs.append(again.cost_per_m_output_tokens)
        load = (first.max_load + (again.max_load or first.max_load)) / 2
        return first.model_copy(update={"starts": 2, "costs": costs, "max_load": load,
                                        "cost_per_m_output_tokens": sum(costs) / 2})

    def _tell(self, trial: optuna.Trial, result: TrialResult) -> None:
        slo = self.ctx.workload.slo
        self.rejected += result.rejected_before_launch
        (_results_dir(self.cfg) / f"trial-{trial.number:03d}.json").write_text(
            result.model_dump_json(indent=2))
        for key, value in constraint_values(result, slo.ttft_p95_ms, slo.itl_p95_ms,
                                            slo.max_error_rate).items():
            trial.set_constraint(key, value)
        trial.set_user_attr("outcome", result.outcome)
        trial.set_user_attr("detail", result.detail[:500])
        trial.set_user_attr("max_load", result.max_load)
        self.study.tell(trial, result.cost_per_m_output_tokens if result.feasible
                        else FAILED_COST)
        self.state.results.append(result)
        self.tracker.log_trial(result)
        self.ctx.progress.note(result.line())
        best = self.state.feasible[:1]
        if best:
            self.ctx.progress.status("best", f"{money(best[0].cost_per_m_output_tokens)}/M "
                                     f"output tokens (trial {best[0].number})")


def results_summary(results: list[TrialResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        key = "rejected_before_launch" if r.rejected_before_launch else r.outcome
        counts[key] = counts.get(key, 0) + 1
    return counts
