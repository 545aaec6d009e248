"""The study loop: Optuna asks, a trial runs, Optuna is told; any number of processes, on any
number of hosts, may run it on one study.

The study lives in its Optuna storage (:mod:`tuner.study.coordination.joining`): created once,
with its record, its defaults trial (trial 0 of the study: always the engine's defaults, so
every study states its tuning delta) and the configurations to try first; joined by the others.
The budget is the study's, counted from the storage (:mod:`tuner.study.coordination.ledger`): a
process takes trials until every start the budget allows is finished or running somewhere,
waits while other workers' trials might still come back (a dead worker's trial is failed by its
heartbeat and queued again once), and returns when the budget is spent. Configurations rejected
by a rule are told as infeasible without a launch and do not count toward ``--trials`` (at most
``4 x trials`` of them are tried). With the workload's ``quality``, the search's trials check
lossy configurations against the defaults' greedy answers (:mod:`tuner.study.quality_guard`); a
second start of the same configuration is not checked again. Each process keeps its own trials'
full results in ``trials/trial-NNN.json``; the storage keeps every trial's result without its
steps."""

from __future__ import annotations

import logging
import random
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from tuner.host import write_atomic
from tuner.metrics import money
from tuner.study.config import StudyConfig
from tuner.study.coordination import (
    BASELINE,
    REJECTED,
    RESULT,
    STARTS,
    WORKER,
    QueuedBaseline,
    StartTracking,
    beating,
    count,
    fail_stale,
    from_queue,
    give_back,
    incumbent,
    ledger,
    open_shared,
    result_attr,
    return_to_queue,
    spend_line,
    starts_of,
    study_spend,
    to_finish,
    without_waiting,
    worker_id,
)
from tuner.study.outcome import TrialResult
from tuner.study.policy import challenges, confirm, told_value
from tuner.study.quality_guard import QualityGuard
from tuner.study.record import StudyRecord
from tuner.study.repeats import fresh_start
from tuner.study.run_folder import again_tag
from tuner.study.state import StudyProgress, load_results
from tuner.study.tracker import Tracker
from tuner.study.trial import TrialContext, constraint_values, run_trial

log = logging.getLogger(__name__)

POLL_S = 5.0
"""While the last trials run elsewhere, how often a waiting worker looks at the storage."""

def run_search(cfg: StudyConfig, ctx: TrialContext, tracker: Tracker, state: StudyProgress,
               *, create: bool = True, start_tracking: StartTracking | None = None
               ) -> optuna.Study:
    """Take trials of the study until its budget is spent; ``state.results`` ends with every
    finished trial of the study (all workers')."""
    defaults = ctx.defaults_config()
    baseline = None if cfg.baseline is None else QueuedBaseline(
        cfg.baseline.name, ctx.space.legal_defaults({**defaults, **cfg.baseline.knobs}))
    shared = open_shared(cfg, ctx.space.legal_defaults(defaults), create=create,
                         start_tracking=start_tracking, baseline=baseline)
    study = shared.study
    ctx.progress.note(f"sampler: {shared.record.sampler}")
    state.results = load_results(cfg, study)
    tracker.catch_up([r for r in state.results
                      if cfg.folder.trial(r.number).is_file()])
    search = _Search(cfg, ctx, tracker, state, study, shared.record)
    if cfg.parallel <= 1:
        search.worker(0)
    else:
        _run_parallel(search, cfg.parallel)
    state.results = load_results(cfg, study)
    return study


def _run_parallel(search: _Search, parallel: int) -> None:
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="trial") as pool:
        futures = [pool.submit(search.worker, i) for i in range(parallel)]
        try:
            for future in futures:
                future.result()
        except BaseException:
            search.stop()
            search.ctx.stop_all()  # wakes every worker: their engines are gone
            wait(futures, timeout=120)
            raise


class _Search:
    """Ask, run, tell; shared by the threads of a parallel study (ask/tell under a lock), and
    by every process on the study through its storage."""

    def __init__(self, cfg: StudyConfig, ctx: TrialContext, tracker: Tracker,
                 state: StudyProgress, study: optuna.Study, record: StudyRecord) -> None:
        self.cfg, self.ctx, self.tracker, self.state, self.study = cfg, ctx, tracker, state, study
        self.record = record
        self.trials = record.trials
        self.deadline = record.deadline
        self.budget_usd = record.budget_usd
        self.beat_s = float(record.heartbeat_s)
        self.poll_s = min(self.beat_s, POLL_S)
        self.worker_id = worker_id()
        self.jitter = random.Random()  # seeded from the OS: a pause, not a result
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # a trial of this process ended
        self.stopping = threading.Event()
        check = ctx.workload.quality
        self.guard = None if check is None else QualityGuard(
            check, ctx.spec, ctx.hardware.device, study, cfg.folder.quality, ctx.progress)

    def _next(self) -> tuple[optuna.Trial, dict[str, Any], bool] | None:
        """The next trial this process runs; None when the study's budget is spent (or the
        time budget is, or the money budget), or this process is stopping. While every start
        the budget allows is taken by running trials, it waits: a worker that dies gives its
        trial back."""
        while not self.stopping.is_set():
            with self.lock:
                fail_stale(self.study)
                led = ledger(self.study)
                if led.spent(self.trials):
                    return None
                if self.deadline is not None and time.time() >= self.deadline:
                    self.ctx.progress.note("time budget spent; no new trials")
                    return None
                if self._money_spent():
                    return None
                asked = not led.taken(self.trials)
                if asked and (job := self._ask()) is not None:
                    return job
                self.ctx.progress.status("trial", "waiting for the last running trials")
                # A trial asked and given back: two processes that took the last start at
                # once both gave it back, and must not ask again in step.
                self.changed.wait(self.poll_s * (self.jitter.uniform(0.25, 1.0) if asked
                                                 else 1.0))
        return None

    def stop(self) -> None:
        with self.lock:
            self.stopping.set()
            self.changed.notify_all()

    def _ask(self) -> tuple[optuna.Trial, dict[str, Any], bool] | None:
        with warnings.catch_warnings():  # heartbeats are ours to send (Optuna says ask-and-tell
            warnings.simplefilter("ignore", UserWarning)  # has none): see shared_study.beating
            trial = self.study.ask()
        trial.set_user_attr(WORKER, self.worker_id)
        trials = self.study.get_trials(deepcopy=False)
        frozen = next(t for t in trials if t.number == trial.number)
        led = count(trials)
        if not led.holds(self.trials, fresh=not from_queue(frozen)):
            give_back(self.study, trial)  # another process took the last start at once
            return None
        place = self._place(trial, trials, led.launched)
        is_default = bool(trial.user_attrs.get("defaults"))
        baseline = trial.user_attrs.get(BASELINE)
        if is_default:  # Optuna is told only the defaults that are points of the space
            config = self.ctx.space.tell_defaults(trial, self.ctx.defaults_config())
        elif baseline:  # likewise the baseline's points; the engine runs its knobs alone
            knobs = dict(self.cfg.baseline.knobs) if self.cfg.baseline else {}
            self.ctx.space.tell_defaults(trial, {**self.ctx.defaults_config(), **knobs})
            config = knobs
        else:
            config = self.ctx.space.sample(trial)
            # Enqueued knobs outside the search space still go to the engine.
            config.update({k: v for k, v in trial.user_attrs.get("enqueued", {}).items()
                           if k not in config and k in self.ctx.spec.knobs})
        self.ctx.progress.status(
            "trial", f"{place} of {self.trials} (optuna #{trial.number})"
            + (", engine defaults" if is_default else "")
            + (f", your current configuration ({baseline})" if baseline else ""))
        return trial, config, is_default

    def _place(self, trial: optuna.Trial, trials: list[FrozenTrial], launched: int) -> int:
        """Where ``trial`` stands in the study's budget, for the progress line: the finished
        starts and the lower-numbered running trials' before it. Not the test of the budget
        (``Ledger.holds`` counts every running start): Optuna numbers a trial when it is made,
        so a retry queued by one process may carry a lower number than a fresh trial another
        process asked a moment later, and be taken after it."""
        before = [t for t in trials if t.state == TrialState.RUNNING and t.number < trial.number]
        return launched + sum(map(starts_of, before)) + 1

    def worker(self, index: int) -> None:
        while (job := self._next()) is not None:
            trial, config, is_default = job
            with beating(self.study, trial, self.beat_s):
                try:
                    result = run_trial(self.ctx, trial.number, config, defaults=is_default,
                                       guard=self.guard)
                    if (name := trial.user_attrs.get(BASELINE)) is not None:
                        result = result.model_copy(update={"baseline": name})
                    if self._challenges(trial, result):
                        result = self._confirm(result, config)
                    if self.stopping.is_set():  # its engine was stopped under it
                        raise KeyboardInterrupt("stopping")
                except BaseException:
                    self._give_back(trial)
                    raise
                try:
                    with self.lock:
                        self._tell(trial, result)
                        self.changed.notify_all()
                except BaseException:  # its result could not be kept (a full disk)
                    self._give_back(trial)
                    raise

    def _give_back(self, trial: optuna.Trial) -> None:
        """Queue an interrupted trial again; when even that fails (the storage on a full disk),
        its heartbeat stops and another run fails it and runs it again: the error that stopped
        this one is what the user sees."""
        with self.lock:
            try:
                with without_waiting(self.study._storage):  # no public name for it
                    return_to_queue(self.study, trial)
            except Exception as exc:
                log.warning("trial %d could not be given back to the study now (%s); it is "
                            "run again after its heartbeat's grace", trial.number,
                            str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
            self.changed.notify_all()

    def _challenges(self, trial: optuna.Trial, result: TrialResult) -> bool:
        """With intensification: ``result`` beats the study's incumbent and the budget allows
        another start (which is then reserved on the trial). Another process may ask a trial
        between the look at the budget and the reservation (it counted this trial's one
        start): the budget is looked at again, and a reservation past it is undone."""
        cost = result.cost_per_m_output_tokens if result.feasible else None
        if not challenges(intensify=self.cfg.intensify, cost=cost, incumbent=None):
            return False  # no storage call: a trial ending in an outage keeps its result first
        with self.lock:
            if not challenges(intensify=True, cost=cost, incumbent=incumbent(self.study)):
                return False
            if not self._fits(extra=1):
                return False
            trial.set_user_attr(STARTS, 2)
            if not self._fits(extra=0):
                trial.set_user_attr(STARTS, 1)
                return False
            return True

    def _fits(self, extra: int) -> bool:
        """The finished and running trials' starts, and ``extra`` more, are within budget."""
        led = ledger(self.study)
        return led.launched + led.running + extra <= self.trials

    def _confirm(self, first: TrialResult, config: dict[str, Any]) -> TrialResult:
        """Measure a challenger again on a fresh start: it leads on the mean of both starts,
        and only if it met the SLOs on both (a lucky start must not win the study)."""
        assert first.cost_per_m_output_tokens is not None
        assert first.max_load is not None
        self.ctx.progress.note(f"{first.line()}; beats the incumbent: measured again")
        again = fresh_start(self.ctx, first.number, config, defaults=first.defaults,
                            tag=again_tag(first.number))
        both = confirm(first.cost_per_m_output_tokens,
                       again.cost_per_m_output_tokens if again.feasible else None)
        if not both.feasible:
            return again.model_copy(update={
                "starts": 2, "costs": both.costs, "timing": first.timing.plus(again.timing),
                "detail": f"met the SLOs on its first start, not on its second: {again.detail}"})
        load = (first.max_load + (again.max_load or first.max_load)) / 2
        return first.model_copy(update={"starts": 2, "costs": both.costs, "max_load": load,
                                        "cost_per_m_output_tokens": both.cost,
                                        "timing": first.timing.plus(again.timing)})

    def _tell(self, trial: optuna.Trial, result: TrialResult) -> None:
        slo = self.ctx.workload.slo
        kept = self.cfg.folder.trial(trial.number)
        kept.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(kept,
                     result.model_dump_json(indent=2))
        try:
            for key, value in constraint_values(result, slo).items():
                trial.set_constraint(key, value)
            trial.set_user_attr("outcome", result.outcome)
            trial.set_user_attr("detail", result.detail[:500])
            trial.set_user_attr("max_load", result.max_load)
            trial.set_user_attr(STARTS, result.starts)
            trial.set_user_attr(REJECTED, result.rejected_before_launch)
            trial.set_user_attr(RESULT, result_attr(result))
            self.study.tell(trial, told_value(result.cost_per_m_output_tokens,
                                              feasible=result.feasible))
        except UpdateFinishedTrialError:
            # Silent past the grace period (a paused host): another worker failed it and its
            # retry is queued. The result stays on this host only.
            log.warning("trial %d was failed by its heartbeat meanwhile; its result is kept in "
                        "%s only", trial.number, kept)
            return
        except BaseException:
            # The storage did not take it (a disk filled after the JSON was written): the trial
            # is not finished for the study, which runs it again on resume, so no file may say
            # it is.
            kept.unlink(missing_ok=True)
            raise
        self.state.results.append(result)
        self.state.own.append(result)
        self.tracker.log_trial(result)
        self.ctx.progress.note(result.line())
        best = self.state.feasible[:1]
        if best:
            self.ctx.progress.status("best", f"{money(best[0].cost_per_m_output_tokens)}/M "
                                     f"output tokens (trial {best[0].number})")
        self._show_spend()

    def _money_spent(self) -> bool:
        """The study's finished trials (every worker's) spent the money budget."""
        if self.budget_usd is None:
            return False
        spent = study_spend(self.study, self.ctx.workload.cost)
        if spent.usd < self.budget_usd:
            return False
        self.ctx.progress.note(f"money budget spent ({money(spent.usd)} of "
                               f"{money(self.budget_usd)}); no new trials")
        return True

    def _show_spend(self) -> None:
        """The progress line: what the study spent, and what finishing it takes."""
        spent = study_spend(self.study, self.ctx.workload.cost)
        left = to_finish(spent, self.trials - ledger(self.study).launched,
                         parallel=self.cfg.parallel, budget_usd=self.budget_usd,
                         seconds_left=None if self.deadline is None
                         else self.deadline - time.time())
        self.ctx.progress.status("spend", spend_line(spent, left, self.budget_usd))


def results_summary(results: list[TrialResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        key = "rejected_before_launch" if r.rejected_before_launch else r.outcome
        counts[key] = counts.get(key, 0) + 1
    return counts
