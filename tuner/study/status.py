"""Where a study stands, from its storage alone (``tune status``): what is done, what runs
where, what failed, the best so far, the re-measurement (and its outcome once done) and an
estimate of the time left."""

from __future__ import annotations

import math
import time
from datetime import datetime

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel

from tuner.study.coordination import EXCESS, WORKER, ledger, rejected, starts_of, stored_result
from tuner.study.outcome import TrialResult
from tuner.study.record import StudyRecord
from tuner.study.repeats import RoundStatus


class Running(BaseModel):
    number: int
    worker: str
    elapsed_s: float
    defaults: bool


class StudyStatus(BaseModel):
    study: str
    engine: str
    model: str
    workload: str
    trials: int
    launched: int
    running: list[Running]
    failed: int
    """Trials lost (a dead or interrupted worker); each is queued again, once."""
    rejected: int
    waiting: int
    outcomes: dict[str, int]
    best: TrialResult | None
    mean_trial_s: float | None
    time_left_s: float | None
    deadline_in_s: float | None
    remeasure: RoundStatus | None = None
    """None before the search is over (or when the study re-measures nothing)."""

    def lines(self) -> list[str]:
        out = [f"study {self.study}: {self.engine} on {self.workload} ({self.model})",
               f"trials: {self.launched} of {self.trials} done, {len(self.running)} running, "
               f"{self.failed} failed (lost workers; queued again), {self.rejected} rejected "
               f"before launch, {self.waiting} queued"]
        if self.outcomes:
            out.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in
                                                sorted(self.outcomes.items())))
        out += [f"  running: #{r.number} on {r.worker} for {_clock(r.elapsed_s)}"
                + (" (engine defaults)" if r.defaults else "") for r in self.running]
        out.append("best so far: " + (self.best.line() if self.best else "none yet"))
        if self.remeasure is not None:
            out += self.remeasure.lines()
        if self.time_left_s is not None:
            out.append(f"time left: about {_clock(self.time_left_s)} (trials of "
                       f"{_clock(self.mean_trial_s or 0)} on average)")
        if self.deadline_in_s is not None:
            out.append(f"time budget: {_clock(max(0.0, self.deadline_in_s))} left")
        return out


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def _age(t: FrozenTrial, now: datetime) -> float:
    return (now - t.datetime_start).total_seconds() if t.datetime_start else 0.0


def time_left(mean_s: float | None, remaining: int, running: list[Running]) -> float | None:
    """The running trials' rest, then the remaining trials spread over the workers that are
    running one (at least one)."""
    if mean_s is None:
        return None
    workers = max(1, len({r.worker for r in running}))
    rest = max((max(0.0, mean_s - r.elapsed_s) for r in running), default=0.0)
    return rest + math.ceil(remaining / workers) * mean_s


def starts_left(record: StudyRecord, remeasure: RoundStatus | None) -> int:
    """Fresh starts the re-measurement has still to run (before it starts: at most the
    defaults and the top configurations, each ``repeats`` times)."""
    if remeasure is not None:
        return remeasure.waiting  # the running ones are among the running trials
    return (record.remeasure_top + 1) * record.remeasure_repeats if record.remeasure_top else 0


def study_status(name: str, study: optuna.Study, record: StudyRecord,
                 remeasure: RoundStatus | None = None, now: float | None = None
                 ) -> StudyStatus:
    at = time.time() if now is None else now
    moment = datetime.fromtimestamp(at)  # Optuna stores naive local times
    trials = study.get_trials(deepcopy=False)
    led = ledger(study)
    done = [t for t in trials if t.state == TrialState.COMPLETE and not rejected(t)]
    durations = [(t.datetime_complete - t.datetime_start).total_seconds() / starts_of(t)
                 for t in done if t.datetime_start and t.datetime_complete]
    mean = sum(durations) / len(durations) if durations else None
    running = [Running(number=t.number, worker=str(t.user_attrs.get(WORKER, "?")),
                       elapsed_s=_age(t, moment), defaults=bool(t.user_attrs.get("defaults")))
               for t in trials if t.state == TrialState.RUNNING]
    results = [r for t in done if (r := stored_result(t)) is not None]
    feasible = sorted((r for r in results if r.feasible),
                      key=lambda r: r.cost_per_m_output_tokens or math.inf)
    outcomes: dict[str, int] = {}
    for t in done:
        key = str(t.user_attrs.get("outcome", "?"))
        outcomes[key] = outcomes.get(key, 0) + 1
    remaining = max(0, record.trials - led.launched - led.running)
    remaining += starts_left(record, remeasure)
    busy = running + [Running(number=u.trial, worker=u.worker, elapsed_s=u.elapsed_s,
                              defaults=False) for u in (remeasure.running if remeasure else [])]
    left = (0.0 if led.spent(record.trials) and not busy and remaining == 0
            else time_left(mean, remaining, busy))
    deadline_in = None if record.deadline is None else record.deadline - at
    if left is not None and deadline_in is not None:
        left = min(left, max(0.0, deadline_in))
    return StudyStatus(
        study=name, engine=record.engine, model=record.model, workload=record.workload_name,
        trials=record.trials, launched=led.launched, running=running,
        failed=sum(t.state == TrialState.FAIL and not t.user_attrs.get(EXCESS)
                   for t in trials),
        rejected=led.rejected, waiting=led.waiting, outcomes=outcomes,
        best=feasible[0] if feasible else None, mean_trial_s=mean,
        time_left_s=left, deadline_in_s=deadline_in, remeasure=remeasure)
