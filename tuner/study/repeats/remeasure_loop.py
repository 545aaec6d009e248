"""A process's part in the study's re-measurement, after its search: wait until no trial runs
anywhere, open the round (:mod:`tuner.study.repeats.remeasure_round`; the first process there makes
it), take its units one at a time until none is queued or running, and assemble the outcome
from every worker's units. Every process on the study (``tune`` and ``tune worker``) does
this, so the fresh starts spread over the hosts; a single process takes them all, in the
interleaved order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from tuner.loadgen import Progress
from tuner.metrics import PooledSpread
from tuner.study.config import StudyConfig
from tuner.study.coordination import (
    WORKER,
    beating,
    fail_stale,
    return_to_queue,
    storage_for,
    stored_record,
    worker_id,
)
from tuner.study.outcome import Timing
from tuner.study.repeats.remeasure import (
    Candidate,
    RemeasureOutcome,
    measure_once,
    tokens_from_records,
)
from tuner.study.repeats.remeasure_round import (
    RoundPlan,
    assemble,
    next_unit,
    open_round,
    plan_for,
    plan_of,
    race_on,
    record_unit,
    round_name,
    take_race,
    take_summary,
    units_running,
)
from tuner.study.state import StudyProgress, load_results
from tuner.study.trial import TrialContext

POLL_S = 5.0
"""While units run elsewhere, how often a waiting process looks at the storage."""


@dataclass(frozen=True)
class Remeasurement:
    outcome: RemeasureOutcome
    """From every worker's units; its timing is this process's own starts."""
    round: optuna.Study
    beat_s: float

    @contextmanager
    def summary_turn(self) -> Iterator[bool]:
        """True in the one process that records the study's summary (it took the round's
        summary unit, and beats for it meanwhile); an interrupt queues the unit again."""
        trial = take_summary(self.round)
        if trial is None:
            yield False
            return
        with beating(self.round, trial, self.beat_s):
            try:
                yield True
            except BaseException:
                return_to_queue(self.round, trial)
                raise
        # Silent too long, it was failed and queued again; the summary is recorded anyway.
        with suppress(UpdateFinishedTrialError):
            self.round.tell(trial, 0.0)


def remeasure_study(cfg: StudyConfig, ctx: TrialContext, study: optuna.Study,
                    state: StudyProgress, prior: PooledSpread | None = None
                    ) -> Remeasurement | None:
    """This process's part in the re-measurement of the study's search (as its stored record
    says: None when it re-measures nothing); ``state.results`` ends with every worker's
    trials."""
    record = stored_record(study)
    if record is None or record.remeasure_top == 0:
        return None
    poll_s = min(float(record.heartbeat_s), POLL_S)
    wait_search_over(study, ctx.progress, poll_s)
    state.results = load_results(cfg, study)
    round_ = open_round(storage_for(cfg.storage_url, record.heartbeat_s),
                        round_name(cfg.name, record),
                        lambda: plan_for(ctx.spec.name, state.results,
                                         top=record.remeasure_top,
                                         repeats=record.remeasure_repeats, seed=record.seed,
                                         usd_per_hour=ctx.workload.cost.usd_per_hour_for,
                                         resolution=ctx.workload.capacity.search_resolution(),
                                         max_repeats=record.race_repeats,
                                         deadline=record.deadline, prior=prior))
    timing = take_units(ctx, round_, float(record.heartbeat_s), poll_s)
    return Remeasurement(assemble(round_, timing), round_, float(record.heartbeat_s))


def wait_search_over(study: optuna.Study, progress: Progress, poll_s: float) -> None:
    """Until no trial of the search runs anywhere (a dead worker's is failed meanwhile)."""
    while True:
        fail_stale(study)
        if not study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            return
        progress.status("trial", "waiting for the last running trials")
        time.sleep(poll_s)


def take_units(ctx: TrialContext, round_: optuna.Study, beat_s: float, poll_s: float
               ) -> Timing:
    """Run the round's units one at a time until none is queued or running anywhere (a dead
    worker's unit is failed and queued again meanwhile); the starts' timing."""
    plan = plan_of(round_)
    timing = Timing()
    t0 = time.monotonic()
    while True:
        fail_stale(round_)
        taken = next_unit(round_)
        if taken is None:
            if not units_running(round_):
                if (race := take_race(round_)) is None:
                    timing.wall_s = time.monotonic() - t0
                    return timing
                decide_race(round_, plan, *race, beat_s)
                continue
            ctx.progress.status("trial", "waiting for the last re-measurements")
            time.sleep(poll_s)
            continue
        trial, unit = taken
        with beating(round_, trial, beat_s):
            try:
                trial.set_user_attr(WORKER, worker_id())
                run = measure_once(Candidate(plan.engine, plan.candidates[unit.candidate], ctx),
                                   unit.repeat, timing)
            except BaseException:
                return_to_queue(round_, trial)
                raise
            tokens = (tokens_from_records(run) if run.records_path and run.failure is None
                      else None)
            record_unit(round_, trial, run, tokens)


def decide_race(round_: optuna.Study, plan: RoundPlan, trial: optuna.Trial, after: int,
                beat_s: float) -> None:
    """This process took the race unit after repeat ``after``: add the next repeat of the
    undecided candidates, or end the race (an interrupt queues the unit again)."""
    with beating(round_, trial, beat_s):
        try:
            race_on(round_, plan, after, time.time())
        except BaseException:
            return_to_queue(round_, trial)
            raise
        with suppress(UpdateFinishedTrialError):
            round_.tell(trial, 0.0)
