"""What a study has spent on accelerators, and what finishing it will take.

A trial's spend is its engine time (start-up, warm-up, measurement, teardown: every second
the engine held its accelerators) times the hourly price of the accelerators it used
(``workload.cost``). A configuration rejected before launch costs nothing. Counted from the
storage's finished trials, every worker's, as the trial budget is
(:mod:`tuner.study.coordination.ledger`); a trial lost with its worker is not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from tuner.metrics import money
from tuner.study.coordination.ledger import stored_result
from tuner.study.outcome import TrialResult
from tuner.workload import Cost


def engine_seconds(r: TrialResult) -> float:
    """The seconds the trial's engine held its accelerators (all its starts)."""
    t = r.timing
    return t.startup_s + t.warmup_s + t.measure_s + t.teardown_s


def trial_usd(r: TrialResult, cost: Cost) -> float:
    """USD = engine hours x the price of the accelerators the trial used."""
    return engine_seconds(r) / 3600.0 * cost.usd_per_hour_for(r.accelerators)


@dataclass(frozen=True)
class Spend:
    """The spend of a study's finished trials."""

    usd: float
    starts: int
    """Engine starts of the launched trials (a trial measured again counts two)."""
    wall_s: float
    """The launched trials' wall time, summed."""

    @property
    def usd_per_start(self) -> float | None:
        return self.usd / self.starts if self.starts else None

    @property
    def wall_per_start(self) -> float | None:
        return self.wall_s / self.starts if self.starts else None


def spend_of(results: list[TrialResult], cost: Cost) -> Spend:
    launched = [r for r in results if not r.rejected_before_launch]
    return Spend(usd=sum(trial_usd(r, cost) for r in launched),
                 starts=sum(r.starts for r in launched),
                 wall_s=sum(r.timing.wall_s for r in launched))


def study_spend(study: optuna.Study, cost: Cost) -> Spend:
    """The spend of every finished trial of the study, from its storage."""
    results = [r for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
               if (r := stored_result(t)) is not None]
    return spend_of(results, cost)


@dataclass(frozen=True)
class ToFinish:
    """An estimate of what the rest of the search takes, from the mean launched start."""

    starts: int
    seconds: float | None
    usd: float | None


def to_finish(spend: Spend, starts_left: int, *, parallel: int = 1,
              budget_usd: float | None = None, seconds_left: float | None = None) -> ToFinish:
    """The starts the trial budget has left (fewer when the money budget, or the time budget
    of ``seconds_left``, runs out first), their time at ``parallel`` at once and their cost.
    A start begun before a budget runs out runs to its end."""
    per_usd, per_s = spend.usd_per_start, spend.wall_per_start
    starts = max(0, starts_left)
    if budget_usd is not None and per_usd:
        starts = min(starts, math.ceil(max(0.0, budget_usd - spend.usd) / per_usd))
    if seconds_left is not None and per_s:
        starts = min(starts, math.ceil(max(0.0, seconds_left) * max(1, parallel) / per_s))
    return ToFinish(starts=starts,
                    seconds=None if per_s is None else starts * per_s / max(1, parallel),
                    usd=None if per_usd is None else starts * per_usd)


def spend_line(spend: Spend, finish: ToFinish, budget_usd: float | None) -> str:
    """The progress line: ``$1.20 of $10 spent; to finish: 8 starts, about 25 min, $0.96``."""
    head = (f"{money(spend.usd)} of {money(budget_usd)} spent" if budget_usd is not None
            else f"{money(spend.usd)} spent")
    if finish.seconds is None or finish.usd is None:
        return f"{head} ({spend.starts} engine starts)"
    return (f"{head}; to finish: {finish.starts} engine starts, about "
            f"{_duration(finish.seconds)}, {money(finish.usd)}")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
