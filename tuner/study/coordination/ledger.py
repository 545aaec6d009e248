"""The study's budget, counted from its storage (every worker's trials), never from one process.

What a trial stores about itself (its user attributes) is what the count reads:
``tuner.starts`` (fresh engine starts it took, or has reserved while running: 2 when it is
being measured again), ``tuner.rejected`` (a configuration that broke a rule and was never
launched; these do not count toward ``--trials``), ``tuner.worker`` (who runs it),
``outcome`` and ``tuner.result`` (the trial's result, see :func:`stored_result`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.study.outcome import TrialResult
from tuner.study.policy import budget_holds, budget_spent, budget_taken

STARTS = "tuner.starts"
REJECTED = "tuner.rejected"
WORKER = "tuner.worker"
RESULT = "tuner.result"


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


def count(trials: list[FrozenTrial]) -> Ledger:
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
    return Ledger(launched=launched, running=running, rejected=rejects, waiting=waiting)


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
