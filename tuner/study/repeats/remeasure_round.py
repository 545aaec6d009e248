"""The re-measurement as units of work in the study's storage, for any worker to take.

A round re-measures the candidates of one search (the defaults and the best ``top``
configurations, ``repeats`` fresh starts each). It is an Optuna study beside the search's, in
the same storage, named after the search's budget (:func:`round_name`), so a study run again
with a larger budget gets a new round and one run again as it was reuses its finished round.
The round is created once, by the first process that finds the search over (the storage lets
one create it): it picks the candidates from every worker's results, enqueues one unit per
fresh start, repeats interleaved over candidates so that drift on the machines hits them all,
then the summary unit, and marks the round ready. A unit is a queued trial of the round; a
worker claims it as Optuna claims queued trials
(:func:`~tuner.study.coordination.shared_study.take_queued`: two workers never take the same
unit), beats for it while it runs and stores its result: the
run, and the output tokens of its best step (all the bootstrap needs, so no host's files are).
A unit silent for the grace period is failed by whoever looks next and queued again once, as
a search trial is. Once every unit is done, one process takes the summary unit (and records
the study's summary in MLflow); anyone can assemble the outcome from the storage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel

from tuner.core import RESOLUTION, StrictModel, StudyError
from tuner.metrics import PooledSpread, RunTokens
from tuner.study.coordination import READY_ATTR, READY_WAIT_S, WORKER, claim, take_queued
from tuner.study.outcome import MeasuredRun, Timing, TrialResult
from tuner.study.record import StudyRecord
from tuner.study.repeats.remeasure import (
    RemeasureOutcome,
    outcome_of,
    pick_candidates,
)

log = logging.getLogger(__name__)

PLAN = "tuner.remeasure"
"""The round's user attribute that holds its plan."""
UNIT = "tuner.unit"
"""A unit's user attribute: which candidate, which repeat."""
SUMMARY = "tuner.summary"
"""The summary unit's user attribute."""
RACE = "tuner.race"
"""A race unit's user attribute: the repeat after which it decides whether to add one."""
RUN = "tuner.run"
TOKENS = "tuner.tokens"
LOST = "lost: no worker finished it (each one running it stopped)"


class RoundPlan(StrictModel):
    engine: str
    seed: int
    repeats: int
    candidates: list[TrialResult]
    usd_per_hour: list[float]
    """Each candidate's hourly cost (for a unit no worker finished)."""
    resolution: float = RESOLUTION
    """The difference the verdict against the defaults decides (rounds planned before it: 5%)."""
    max_repeats: int | None = None
    """A race: after ``repeats``, a repeat more at a time of the defaults and the candidates
    not yet decided against them, up to this many (None: no race)."""
    deadline: float | None = None
    """Unix time after which the race adds no repeat (the study's time budget)."""
    prior: PooledSpread | None = None
    """This host and engine's start-to-start spread as ``tune measure`` recorded it: the
    verdicts' noise when the round's own starts pool none (one repeat)."""

    def last_repeat(self) -> int:
        return max(self.repeats, self.max_repeats or 0)

    def looks(self) -> int:
        """How many times the verdicts may be decided on: after each repeat of the race."""
        return self.last_repeat() - self.repeats + 1


@dataclass(frozen=True)
class Unit:
    candidate: int
    repeat: int


def round_name(study: str, record: StudyRecord) -> str:
    return (f"{study}.remeasure-t{record.trials}-top{record.remeasure_top}"
            f"-x{record.remeasure_repeats}"
            + (f"-race{record.race_repeats}" if record.race_repeats else ""))


def plan_for(engine: str, results: list[TrialResult], *, top: int, repeats: int, seed: int,
             usd_per_hour: Callable[[int], float], resolution: float = RESOLUTION,
             max_repeats: int | None = None, deadline: float | None = None,
             prior: PooledSpread | None = None) -> RoundPlan:
    """The round of a finished search: its candidates picked from every worker's results;
    ``usd_per_hour`` of a number of accelerators."""
    picked = pick_candidates(results, top)
    return RoundPlan(engine=engine, seed=seed, repeats=repeats, candidates=picked,
                     usd_per_hour=[usd_per_hour(c.accelerators) for c in picked],
                     resolution=resolution, max_repeats=max_repeats, deadline=deadline,
                     prior=prior)


def open_round(storage: BaseStorage, name: str, plan: Callable[[], RoundPlan]
               ) -> optuna.Study:
    """The round ``name``: made and published here (with ``plan()``) when no process made it
    yet, else the one another process published."""
    round_, created = claim(name, storage, "random", 0, 1, create=True)
    if created:
        try:
            publish(round_, plan())
        except BaseException:
            optuna.delete_study(study_name=name, storage=storage)
            raise
        return round_
    deadline = time.monotonic() + READY_WAIT_S
    while not round_.user_attrs.get(READY_ATTR):
        if time.monotonic() >= deadline:
            raise StudyError(f"re-measurement {name} was left half-made (the process making it "
                             f"died); remove it with: optuna delete-study --study-name {name} "
                             "--storage URL, and run again")
        time.sleep(0.5)
    return round_


def publish(round_: optuna.Study, plan: RoundPlan) -> None:
    round_.set_user_attr(PLAN, plan.model_dump(
        mode="json", exclude={"candidates": {"__all__": {"capacity", "log_tail"}}}))
    for rep in range(plan.repeats):
        enqueue_repeat(round_, rep, range(len(plan.candidates)))
    if plan.last_repeat() > plan.repeats:
        enqueue_race(round_, plan.repeats - 1)
    round_.add_trial(optuna.create_trial(state=TrialState.WAITING, user_attrs={SUMMARY: True}))
    round_.set_user_attr(READY_ATTR, True)


def enqueue_repeat(round_: optuna.Study, rep: int, candidates: Iterable[int]) -> None:
    """One unit per candidate for repeat ``rep``, in the order that alternates between repeats
    (A B, B A, A B ...), so drift over time hits each side alike."""
    order = list(candidates)
    for i in reversed(order) if rep % 2 else order:
        round_.add_trial(optuna.create_trial(
            state=TrialState.WAITING, user_attrs={UNIT: {"candidate": i, "repeat": rep}}))


def enqueue_race(round_: optuna.Study, after: int) -> None:
    round_.add_trial(optuna.create_trial(state=TrialState.WAITING,
                                         user_attrs={RACE: {"after": after}}))


def take_race(round_: optuna.Study) -> tuple[optuna.Trial, int] | None:
    """Claim the queued race unit (once no unit is queued or running); None when there is
    none, or another process has it."""
    for t in round_.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        if (race := t.user_attrs.get(RACE)) is not None:
            taken = take_queued(round_, t)
            return None if taken is None else (taken, int(race["after"]))
    return None


def still_racing(outcome: RemeasureOutcome, plan: RoundPlan) -> list[int]:
    """The candidates (their indices in the plan) whose verdict against the defaults is not
    decided yet: neither better, worse nor equivalent at the plan's resolution. A candidate
    decided worse drops out at once, and so does one decided better or equivalent: more
    starts would only narrow what is already decided."""
    decided = {v.trial for v in outcome.verdicts if v.verdict.kind != "unresolved"}
    return [i for i, c in enumerate(plan.candidates) if not c.defaults and c.number not in decided]


def race_on(round_: optuna.Study, plan: RoundPlan, after: int, now: float) -> list[int]:
    """After repeat ``after``: add the next repeat of the defaults and the undecided candidates
    (with the race unit that decides after it), unless every candidate is decided, the race
    has run its repeats, or the time budget is spent. The candidates added."""
    nxt = after + 1
    if nxt >= plan.last_repeat() or (plan.deadline is not None and now >= plan.deadline):
        return []
    undecided = still_racing(assemble(round_), plan)
    if not undecided:
        return []
    base = [i for i, c in enumerate(plan.candidates) if c.defaults]
    enqueue_repeat(round_, nxt, base + undecided)
    if nxt + 1 < plan.last_repeat():
        enqueue_race(round_, nxt)
    log.info("race: repeat %d of the defaults and %d undecided candidate(s)", nxt + 1,
             len(undecided))
    return undecided


def load_round(storage: BaseStorage, name: str) -> optuna.Study | None:
    """The round ``name`` once published; None when there is none yet."""
    try:
        round_ = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None
    return round_ if round_.user_attrs.get(READY_ATTR) else None


def plan_of(round_: optuna.Study) -> RoundPlan:
    return RoundPlan.model_validate(round_.user_attrs[PLAN])


def unit_of(t: FrozenTrial) -> Unit | None:
    data = t.user_attrs.get(UNIT)
    return None if data is None else Unit(int(data["candidate"]), int(data["repeat"]))


def next_unit(round_: optuna.Study) -> tuple[optuna.Trial, Unit] | None:
    """Claim the first queued unit (the interleaved order); None when none is queued."""
    for t in round_.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        unit = unit_of(t)
        if unit is not None and (taken := take_queued(round_, t)) is not None:
            return taken, unit
    return None


def units_running(round_: optuna.Study) -> bool:
    """Whether a unit runs, or a race unit is deciding (it may add units)."""
    return any(unit_of(t) is not None or RACE in t.user_attrs
               for t in round_.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def record_unit(round_: optuna.Study, trial: optuna.Trial, run: MeasuredRun,
                tokens: RunTokens | None) -> None:
    """Store a unit's result and mark it done (its value means nothing)."""
    try:
        trial.set_user_attr(RUN, run.model_dump(mode="json"))
        if tokens is not None:
            trial.set_user_attr(TOKENS, {"tokens": [int(x) for x in tokens.tokens],
                                         "window_s": tokens.window_s, "scale": tokens.scale})
        round_.tell(trial, 0.0)
    except UpdateFinishedTrialError:
        # Silent past the grace period (a paused host): another worker failed it and its
        # retry is queued; that one's result counts.
        log.warning("re-measurement unit %d was failed by its heartbeat meanwhile; its retry "
                    "counts", trial.number)


def take_summary(round_: optuna.Study) -> optuna.Trial | None:
    """Claim the summary unit once no other unit is queued or running; None before that, or
    when another process has it (or had it)."""
    open_ = round_.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    if any(unit_of(t) is not None or RACE in t.user_attrs for t in open_):
        return None
    summary = next((t for t in open_ if t.user_attrs.get(SUMMARY)
                    and t.state == TrialState.WAITING), None)
    return None if summary is None else take_queued(round_, summary)


def _latest(round_: optuna.Study) -> dict[Unit, FrozenTrial]:
    """Each unit's furthest state: done, else running, else queued, else lost."""
    rank = {TrialState.COMPLETE: 3, TrialState.RUNNING: 2, TrialState.WAITING: 1}
    out: dict[Unit, FrozenTrial] = {}
    for t in round_.get_trials(deepcopy=False):
        unit = unit_of(t)
        if unit is not None and (unit not in out or rank.get(t.state, 0)
                                 > rank.get(out[unit].state, 0)):
            out[unit] = t
    return out


def assemble(round_: optuna.Study, timing: Timing | None = None) -> RemeasureOutcome:
    """The round's outcome from every unit's stored result, in the interleaved order; a unit
    no worker finished is a failed run. ``timing``: the calling process's own starts."""
    plan = plan_of(round_)
    latest = _latest(round_)
    runs: list[MeasuredRun] = []
    tokens: dict[tuple[int, int], RunTokens] = {}
    for rep in range(plan.last_repeat()):
        for i, cand in enumerate(plan.candidates):
            if rep >= plan.repeats and Unit(i, rep) not in latest:
                continue  # decided before this repeat of the race, or the race ended
            t = latest.get(Unit(i, rep))
            if t is None or t.state != TrialState.COMPLETE:
                runs.append(MeasuredRun(engine=plan.engine, trial=cand.number,
                                        defaults=cand.defaults, repeat=rep, load=0.0,
                                        usd_per_hour=plan.usd_per_hour[i], failure=LOST))
                continue
            run = MeasuredRun.model_validate(t.user_attrs[RUN])
            runs.append(run)
            if (stored := t.user_attrs.get(TOKENS)) is not None:
                tokens[run.trial, run.repeat] = RunTokens(
                    np.array(stored["tokens"], dtype=np.float64), stored["window_s"],
                    stored["scale"])
    return outcome_of(plan.engine, plan.candidates, runs, plan.seed, timing or Timing(),
                      lambda r: tokens[r.trial, r.repeat], resolution=plan.resolution,
                      looks=plan.looks(), prior=plan.prior)


class RunningUnit(BaseModel):
    trial: int
    repeat: int
    worker: str
    elapsed_s: float


class RoundStatus(BaseModel):
    """Where a round stands (``tune status``)."""

    units: int
    done: int
    running: list[RunningUnit]
    waiting: int
    lost: int
    outcome: RemeasureOutcome | None
    """Once every unit is done or lost."""

    def lines(self) -> list[str]:
        out = [f"re-measurement: {self.done} of {self.units} fresh starts done, "
               f"{len(self.running)} running, {self.waiting} queued"
               + (f", {self.lost} lost" if self.lost else "")]
        out += [f"  running: trial {r.trial} (repeat {r.repeat + 1}) on {r.worker}"
                for r in self.running]
        if self.outcome is None:
            return out
        for c in self.outcome.candidates:
            cost = (f"${c.cost.text('{:.3g}')}/M output tokens" if c.cost
                    else "no cost (" + "; ".join(c.failures[:1]) + ")")
            out.append(f"  trial {c.trial}{' (defaults)' if c.defaults else ''}: {cost}, "
                       f"met the SLOs on {c.slo_passed_runs} of {c.runs} starts")
        w, d = self.outcome.winner, self.outcome.tuning_delta
        out.append("re-measured best: " + ("none" if w is None else f"trial {w.trial}"
                                           + (" (the defaults)" if w.defaults else ""))
                   + (f"; tuning delta {d.text('{:.2f}')}x" if d else ""))
        return out


def round_status(round_: optuna.Study, now: datetime) -> RoundStatus:
    """``now``: the storage's kind of time (Optuna stores naive local times)."""
    plan = plan_of(round_)
    latest = _latest(round_)
    units = len(latest)
    states = [t.state for t in latest.values()]
    running = [RunningUnit(trial=plan.candidates[u.candidate].number, repeat=u.repeat,
                           worker=str(t.user_attrs.get(WORKER, "?")),
                           elapsed_s=(now - t.datetime_start).total_seconds()
                           if t.datetime_start else 0.0)
               for u, t in sorted(latest.items(), key=lambda kv: kv[1].number)
               if t.state == TrialState.RUNNING]
    waiting = states.count(TrialState.WAITING)
    done = states.count(TrialState.COMPLETE)
    finished = not running and not waiting
    return RoundStatus(units=units, done=done, running=running, waiting=waiting,
                       lost=units - done if finished else 0,
                       outcome=assemble(round_) if finished else None)


def status_of_round(storage: BaseStorage, study: str, record: StudyRecord
                    ) -> RoundStatus | None:
    """The re-measurement of study ``study`` as its record describes it; None before its
    search is over (or when it re-measures nothing)."""
    round_ = load_round(storage, round_name(study, record)) if record.remeasure_top else None
    return None if round_ is None else round_status(round_, datetime.now())
