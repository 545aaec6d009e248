"""The search policy of a study, as pure decisions: what Optuna is told of a trial, when the
budget is spent, when a trial challenges the incumbent and is measured again, and what a
challenger's two starts make of it.

Two drivers run a search with these decisions and no others: the live loop
(:mod:`tuner.study.loop`, trials on real engines, counted over a shared storage) and the
offline replay (:mod:`tuner.study.replay`, trials answered from a measured table), so that the
sampler benchmark measures what ``tune`` does. Nothing here does I/O or holds state.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

FAILED_COST = 1e6
"""Objective value told for infeasible trials (their constraints say why)."""

REJECTIONS_PER_TRIAL = 4
"""Configurations the rules reject before launch do not count toward ``--trials``; a study whose
sampler keeps proposing them stops after this many per trial of its budget."""


def told_value(cost: float | None, *, feasible: bool) -> float:
    """What Optuna is told of a trial: its cost when it met the SLOs, else ``FAILED_COST``."""
    return cost if feasible and cost is not None else FAILED_COST


def budget_spent(*, launched: int, rejected: int, trials: int) -> bool:
    """No trial is left to run: the launched starts reached the budget, or the sampler keeps
    proposing configurations the rules reject."""
    return launched >= trials or rejected >= REJECTIONS_PER_TRIAL * trials


def budget_taken(*, launched: int, running: int, trials: int) -> bool:
    """Every start the budget allows is finished or running."""
    return launched + running >= trials


def budget_holds(*, launched: int, running: int, waiting: int, trials: int,
                 fresh: bool) -> bool:
    """A trial just taken (so among the running) keeps its start: the finished and running
    starts are within the budget, all of them, whatever their trials' numbers (two processes
    that take the last start at once both see the other, and both give it back rather than
    both run). A fresh trial, one the sampler just drew, counts the queued trials too: a
    configuration promised a start, or a lost trial's retry, goes before it."""
    return launched + running + (waiting if fresh else 0) <= trials


def challenges(*, intensify: bool, cost: float | None, incumbent: float | None) -> bool:
    """With intensification, a trial that met the SLOs at a cost below the incumbent's (or with
    no incumbent yet) is measured again on a fresh start before it can lead; the driver checks
    that the budget has room for that start."""
    return intensify and cost is not None and (incumbent is None or cost < incumbent)


@dataclass(frozen=True)
class Confirmed:
    """A challenger after its second start."""

    costs: list[float]
    """The cost of each start that met the SLOs."""
    feasible: bool
    """It met the SLOs on both starts: only then may it lead (a lucky start must not win)."""

    @property
    def cost(self) -> float | None:
        """The mean of both starts' costs when it met the SLOs on both."""
        return fmean(self.costs) if self.feasible else None


def confirm(first: float, again: float | None) -> Confirmed:
    """A challenger whose first start cost ``first`` and whose second cost ``again`` (None: the
    second start did not meet the SLOs)."""
    if again is None:
        return Confirmed(costs=[first], feasible=False)
    return Confirmed(costs=[first, again], feasible=True)
