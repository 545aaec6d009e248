"""The study's budget, counted from its storage (every worker's trials), never from one process.

What a trial stores about itself (its user attributes) is what the count reads:
``tuner.starts`` (fresh engine starts it took, or has reserved while running: 2 when it is
being measured again), ``tuner.rejected`` (a configuration that broke a rule and was never
launched; these do not count toward ``--trials``), ``tuner.worker`` (who runs it),
``outcome`` and ``tuner.result`` (the trial's result, see :func:`stored_result`).

A trial lost or given back is failed, and a copy of it queued, in two writes: Optuna's
heartbeat callback (a dead worker's trial), ``return_to_queue`` (an interrupted one) and
``give_back`` (a queued trial taken past the budget) each fail the trial first. Between the
two, the failed trial counts as queued (:func:`owed`), so a fresh trial counted then still
gives way to its copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study.outcome import TrialResult
from tuner.study.policy import budget_holds, budget_spent, budget_taken

STARTS = "tuner.starts"
REJECTED = "tuner.rejected"
WORKER = "tuner.worker"
RESULT = "tuner.result"
EXCESS = "tuner.excess"
"""A trial given back past the budget (a copy of it is queued when it came from the queue)."""
BASELINE = "baseline"
"""A trial's user attribute: the name of the user's current configuration it measures (its
knobs are the study's record's, ``baseline.knobs``)."""
COPY_OF = "tuner.copy_of"
"""A system attribute of the copy ``give_back`` queues: the number of the trial it copies."""
OWED_S = 60.0
"""How long a failed trial counts as queued while no copy of it is in the study: the copy is
the next write after the failure; a trial out of retries, or whose copy was never written (the
storage failed in between), stops counting after this long."""


def from_queue(t: FrozenTrial) -> bool:
    """The trial was queued, not drawn by the sampler: the defaults, an enqueued
    configuration, the user's baseline, a retry of a lost or interrupted trial."""
    return bool("fixed_params" in t.system_attrs or "failed_trial" in t.system_attrs
                or t.user_attrs.get("defaults") or "enqueued" in t.user_attrs
                or BASELINE in t.user_attrs)


def starts_of(t: FrozenTrial) -> int:
    return int(t.user_attrs.get(STARTS, 1))


def rejected(t: FrozenTrial) -> bool:
    if REJECTED in t.user_attrs:
        return bool(t.user_attrs[REJECTED])
    # Trials of earlier tuner versions say so only in their detail.
    return str(t.user_attrs.get("detail", "")).startswith("rejected before launch")


@dataclass(frozen=True)
class Ledger:
    """Where the study's trial budget stands, over all workers."""

    launched: int
    """Engine starts of finished trials (a trial measured twice counts twice)."""
    running: int
    """Starts running trials have taken or reserved."""
    rejected: int
    """Configurations rejected before launch (not in ``--trials``)."""
    waiting: int
    """Trials queued (the defaults, enqueued configurations, retries of lost trials)."""

    def spent(self, trials: int) -> bool:
        """No trial is left to run: the launched ones reached the budget, or the sampler keeps
        proposing configurations the rules reject."""
        return budget_spent(launched=self.launched, rejected=self.rejected, trials=trials)

    def taken(self, trials: int) -> bool:
        """Every start the budget allows is finished or running somewhere."""
        return budget_taken(launched=self.launched, running=self.running, trials=trials)

    def holds(self, trials: int, *, fresh: bool) -> bool:
        """A trial just taken keeps its start (see :func:`tuner.study.policy.budget_holds`)."""
        return budget_holds(launched=self.launched, running=self.running,
                            waiting=self.waiting, trials=trials, fresh=fresh)


def ledger(study: optuna.Study) -> Ledger:
    return count(study.get_trials(deepcopy=False))


def owed(trials: list[FrozenTrial], now: datetime | None = None) -> int:
    """Trials failed within ``OWED_S`` of ``now`` whose copy is not yet in the study and
    will be: lost or interrupted ones (Optuna's retry callback links its copy by
    ``retry_history``), and queued ones given back past the budget (linked by ``COPY_OF``);
    not a fresh trial given back, which the sampler draws again instead."""
    copied = {number for t in trials
              for number in (*t.system_attrs.get("retry_history", [])[-1:],
                             *([t.system_attrs[COPY_OF]] if COPY_OF in t.system_attrs else []))}
    since = (now or datetime.now()) - timedelta(seconds=OWED_S)
    return sum(1 for t in trials
               if t.state == TrialState.FAIL and t.number not in copied
               and (not t.user_attrs.get(EXCESS) or from_queue(t))
               and t.datetime_complete is not None and t.datetime_complete >= since)


def count(trials: list[FrozenTrial], now: datetime | None = None) -> Ledger:
    """The budget's standing in ``trials``; a trial failed but owed a place in the queue
    (:func:`owed`) counts as queued."""
    launched = running = rejects = waiting = 0
    for t in trials:
        if t.state == TrialState.COMPLETE:
            if rejected(t):
                rejects += 1
            else:
                launched += starts_of(t)
        elif t.state == TrialState.RUNNING:
            running += starts_of(t)
        elif t.state == TrialState.WAITING:
            waiting += 1
    return Ledger(launched=launched, running=running, rejected=rejects,
                  waiting=waiting + owed(trials, now))


def incumbent(study: optuna.Study) -> float | None:
    """The cost of the best trial that met the SLOs, on any worker."""
    costs = [t.value for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
             if t.user_attrs.get("outcome") == "ok" and t.value is not None]
    return min(costs, default=None)


def result_attr(result: TrialResult) -> dict[str, Any]:
    """What the storage keeps of a trial's result: all of it but the capacity search's steps
    and the log's tail (on the worker's disk and in MLflow)."""
    return result.model_dump(mode="json", exclude={"capacity", "log_tail"})


def stored_result(t: FrozenTrial) -> TrialResult | None:
    data = t.user_attrs.get(RESULT)
    return None if data is None else TrialResult.model_validate(data)
