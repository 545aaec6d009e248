"""A study shared by several processes, on SQLite storage with fakes at the launcher and
measurer seams: one creator, the budget counted from the storage, the defaults once, no
double enqueue, heartbeats that fail only dead workers' trials, interrupted trials queued
again. (The real thing, PostgreSQL and an MLflow server with worker processes, is in
tests/integration/test_distributed.py.)"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.core import ConfigError
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult
from tuner.study import loop as study_module
from tuner.study.config import StudyConfig
from tuner.study.coordination import shared_study
from tuner.study.coordination.joining import open_shared
from tuner.study.coordination.ledger import (
    COPY_OF,
    EXCESS,
    OWED_S,
    WORKER,
    count,
    ledger,
    rejected,
)
from tuner.study.coordination.shared_study import (
    Heartbeat,
    claim,
    fail_stale,
    give_back,
    read_record,
    storage_for,
)
from tuner.study.loop import run_search
from tuner.study.record import config_from
from tuner.study.state import StudyProgress
from tuner.study.status import Running, study_status, time_left
from tuner.study.tracker import NullTracker
from tuner.study.trial import TrialContext


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers waiting for the last trials look at the storage every 0.1 s, not every 1 s."""
    monkeypatch.setattr(study_module, "POLL_S", 0.1)


def config(tmp_path: Path, host: str, db: Path, **over: object) -> StudyConfig:
    return StudyConfig.model_validate(dict(
        engine="vllm", workload=SMOKE, model="/m", out_dir=tmp_path / host,
        study_name="shared", storage=f"sqlite:///{db}", heartbeat_s=1,
        tracking_uri="http://mlflow.invalid", **over))


def defaults(ctx: TrialContext) -> dict[str, object]:
    return ctx.space.legal_defaults(ctx.defaults_config())


class Slow(FakeMeasurer):
    """Holds each engine a moment, so that workers overlap."""

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        time.sleep(0.05)
        return super().capacity(handle, accelerators)


def test_workers_share_one_budget_and_run_the_defaults_once(tmp_path: Path,
                                                            make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    enqueue = [{"max_batch_size": 32}, {"max_batch_size": 64}]
    launchers = [FakeLauncher() for _ in range(3)]
    states = [StudyProgress() for _ in range(3)]
    errors: list[BaseException] = []

    def host(i: int) -> None:
        try:
            cfg = config(tmp_path, f"host{i}", db, trials=4, enqueue=enqueue)
            run_search(cfg, make_ctx(launchers[i], Slow()), NullTracker(), states[i])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=host, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    study = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}")
    done = study.get_trials(states=(TrialState.COMPLETE,))
    launched = [t for t in done if not rejected(t)]
    assert ledger(study).launched == len(launched) == 4  # the study's budget, not 4 each
    assert sum(len(s.own) for s in states) == len(done)
    assert sum(bool(t.user_attrs.get("defaults")) for t in done) == 1
    for knobs in enqueue:  # each enqueued configuration ran once
        assert sum(t.user_attrs.get("enqueued") == knobs for t in done) == 1
    assert sum(len(launcher.started) for launcher in launchers) == 4
    assert all(launcher.running == set() for launcher in launchers)
    assert len({t.user_attrs[WORKER] for t in done}) == 1  # threads of one process here
    assert not study.get_trials(states=(TrialState.WAITING, TrialState.RUNNING))
    # every process ends with the whole study's results, whoever ran them
    assert all(len(s.results) == len(done) for s in states)


def test_processes_that_create_at_once_make_one_study(tmp_path: Path,
                                                      make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    cfg = config(tmp_path, "a", db, trials=3, enqueue=[{"max_batch_size": 32}])
    storage_for(cfg.storage_url, 1)  # the tables exist before the race
    created: list[bool] = []
    barrier = threading.Barrier(3)

    def create() -> None:
        barrier.wait()
        created.append(open_shared(cfg, defaults(make_ctx())).created)

    threads = [threading.Thread(target=create) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(created) == [False, False, True]
    study = optuna.load_study(study_name="shared", storage=cfg.storage_url)
    waiting = study.get_trials(states=(TrialState.WAITING,))
    assert len(waiting) == 2  # the defaults and the one enqueued configuration, once
    assert sum(bool(t.user_attrs.get("defaults")) for t in waiting) == 1


@pytest.mark.slow
def test_a_dead_workers_trial_is_failed_and_retried_a_live_ones_is_not(
        tmp_path: Path, make_ctx: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    # Stale after more than 1 s of silence (SQLite's clock counts whole seconds).
    monkeypatch.setattr(shared_study, "GRACE_BEATS", 1)
    db = tmp_path / "study.db"
    cfg = config(tmp_path, "a", db, trials=3)
    study = open_shared(cfg, defaults(make_ctx())).study
    dead = study.ask()  # the defaults, taken by a worker that beats once and dies
    dead.set_user_attr(WORKER, "host-a:1")
    Heartbeat(study, dead, 3600).stop()
    live = study.ask()
    beat = Heartbeat(study, live, 0.3)
    try:
        time.sleep(2.2)
        fail_stale(study)
        states = {t.number: t.state for t in study.get_trials()}
        assert states[dead.number] == TrialState.FAIL
        assert states[live.number] == TrialState.RUNNING
        retry = study.get_trials(states=(TrialState.WAITING,))
        assert len(retry) == 1
        assert retry[0].user_attrs.get("defaults")
        assert retry[0].system_attrs["failed_trial"] == dead.number
    finally:
        beat.stop()
    study.tell(live, 2.0)
    # another worker joins, takes the retry first and finishes the study's budget
    state = StudyProgress()
    launcher = FakeLauncher()
    run_search(config(tmp_path, "b", db, trials=3), make_ctx(launcher), NullTracker(), state)
    assert launcher.started[0].request.config == {}  # the defaults, run again
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert sum(bool(t.user_attrs.get("defaults")) for t in done) == 1
    assert ledger(study).launched == 3


class Interrupted(FakeMeasurer):
    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        if self.capacity_calls == 1:
            raise KeyboardInterrupt("signal 15")
        return super().capacity(handle, accelerators)


def test_an_interrupted_trial_goes_back_to_the_queue(tmp_path: Path,
                                                     make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    launcher, measurer = FakeLauncher(), Interrupted()
    measurer.capacity_calls = 0
    with pytest.raises(KeyboardInterrupt):
        run_search(config(tmp_path, "a", db, trials=3), make_ctx(launcher, measurer),
                   NullTracker(), StudyProgress())
    assert launcher.running == set()
    study = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}")
    failed = study.get_trials(states=(TrialState.FAIL,))
    queued = study.get_trials(states=(TrialState.WAITING,))
    assert len(failed) == 1
    assert len(queued) == 1
    assert queued[0].params == failed[0].params
    assert not study.get_trials(states=(TrialState.RUNNING,))


def test_a_trial_asked_past_the_budget_goes_back_untouched(tmp_path: Path,
                                                           make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    study = open_shared(config(tmp_path, "a", db, trials=1,
                               enqueue=[{"max_batch_size": 32}]), defaults(make_ctx())).study
    study.ask()  # the defaults
    extra = study.ask()  # the enqueued configuration, one start too many
    give_back(study, extra)
    queued = study.get_trials(states=(TrialState.WAITING,))
    assert len(queued) == 1
    assert queued[0].system_attrs["fixed_params"] == {"max_batch_size": 32}
    assert queued[0].user_attrs["enqueued"] == {"max_batch_size": 32}


LAUNCHES = {"max_batch_size": 32, "chunked_prefill": True, "kv_cache_dtype": "auto"}
"""An enqueued configuration no rule rejects, whatever the sampler draws for the rest (see
test_a_worker_rebuilds_the_study_from_its_storage)."""


def test_a_queued_trial_taken_after_a_fresher_one_counts_it(tmp_path: Path,
                                                             make_ctx: MakeContext,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """Optuna numbers a trial when it is made: the enqueued configuration here (as a lost
    trial's retry may be) has a lower number than the fresh trial another process runs,
    having asked it between this worker's look at the budget and its ask. Counting only
    lower-numbered running trials, this worker ran the queued one too, one start past the
    budget (the likely cause of CI's 6 trials of 5 in test_a_killed_worker_loses_nothing);
    it gives it back, and the budget holds."""
    db = tmp_path / "study.db"
    made = config(tmp_path, "a", db, trials=2, enqueue=[LAUNCHES])
    study = open_shared(made, defaults(make_ctx())).study
    study.tell(study.ask(), 1.0)  # the defaults, finished: one start left
    other: list[threading.Timer] = []

    def fresh_elsewhere(self: optuna.Study, *args: object, **kwargs: object) -> optuna.Trial:
        if not other:  # another process asks a fresh trial first, then finishes it
            made = study._storage.create_new_trial(study._study_id)
            number = study._storage.get_trial(made).number
            study._storage.set_trial_user_attr(made, WORKER, "elsewhere:1")
            other.append(threading.Timer(1.0, lambda: study.tell(number, 2.0)))
            other[0].start()
        return ask(self, *args, **kwargs)

    ask = optuna.Study.ask
    monkeypatch.setattr(optuna.Study, "ask", fresh_elsewhere)
    launcher = FakeLauncher()
    run_search(made, make_ctx(launcher), NullTracker(), StudyProgress())
    other[0].join()
    assert ledger(study).launched == 2
    assert not launcher.started  # the queued configuration went back, untouched
    queued = study.get_trials(states=(TrialState.WAITING,))
    assert [t.user_attrs["enqueued"] for t in queued] == [LAUNCHES]


def test_a_fresh_trial_yields_its_start_to_a_retry_queued_as_it_was_asked(
        tmp_path: Path, make_ctx: MakeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process fails a dead worker's trial and queues its retry just after this
    worker found the queue empty and before its fresh trial is counted: the fresh trial goes
    back (the sampler draws again later), and the retry runs on the last start."""
    db = tmp_path / "study.db"
    made = config(tmp_path, "a", db, trials=2)
    study = open_shared(made, defaults(make_ctx())).study
    study.tell(study.ask(), 1.0)  # the defaults, finished: one start left
    pop = optuna.Study._pop_waiting_trial_id
    retried: list[bool] = []

    def queued_meanwhile(self: optuna.Study) -> int | None:
        if not retried:
            retried.append(True)
            study.enqueue_trial(LAUNCHES, user_attrs={"enqueued": LAUNCHES})
            return None  # the queue this worker read was empty
        return pop(self)

    monkeypatch.setattr(optuna.Study, "_pop_waiting_trial_id", queued_meanwhile)
    launcher = FakeLauncher()
    run_search(made, make_ctx(launcher), NullTracker(), StudyProgress())
    assert ledger(study).launched == 2
    assert [s.request.config["max_batch_size"] for s in launcher.started] == [32]
    excess = [t for t in study.get_trials(states=(TrialState.FAIL,))
              if t.user_attrs.get("tuner.excess")]
    assert len(excess) == 1
    assert "fixed_params" not in excess[0].system_attrs  # the fresh one went back
    assert not study.get_trials(states=(TrialState.WAITING, TrialState.RUNNING))


def test_a_fresh_trial_yields_to_a_lost_trial_failed_but_not_yet_queued_again(
        tmp_path: Path, make_ctx: MakeContext) -> None:
    """Another process has failed a dead worker's trial (its heartbeat stopped) and queues
    its retry a moment later, in a second write: a fresh trial counted between the two
    counts the failed trial as queued and gives way, and the retry runs on the last start
    (it used to be left in the queue, unrun, once the fresh trial had spent the budget)."""
    db = tmp_path / "study.db"
    made = config(tmp_path, "a", db, trials=2, enqueue=[LAUNCHES])
    study = open_shared(made, defaults(make_ctx())).study
    study.tell(study.ask(), 1.0)  # the defaults, finished: one start left
    lost = study.ask()  # the enqueued configuration, on a worker that dies
    lost.set_user_attr(WORKER, "elsewhere:1")
    study.tell(lost, state=TrialState.FAIL)  # failed as stale; its retry is the next write
    frozen = study.get_trials(deepcopy=False)[lost.number]
    retry = threading.Timer(1.0, lambda: shared_study.requeue(study, frozen))
    retry.start()
    launcher = FakeLauncher()
    run_search(made, make_ctx(launcher), NullTracker(), StudyProgress())
    retry.join()
    assert ledger(study).launched == 2
    assert [s.request.config["max_batch_size"] for s in launcher.started] == [32]
    assert not study.get_trials(states=(TrialState.WAITING, TrialState.RUNNING))


def test_a_failure_counts_as_queued_only_until_its_copy_is_or_for_a_minute() -> None:
    """What ``count`` makes of failed trials: owed a copy while none is in the study, for
    OWED_S at most; never a fresh trial given back, which is drawn again instead."""
    def failed(number: int, **user_attrs: object) -> FrozenTrial:
        made = optuna.create_trial(state=TrialState.FAIL, user_attrs=dict(user_attrs))
        made.number = number
        return made

    lost, fresh, queued = failed(0), failed(1, **{EXCESS: True}), failed(
        2, **{EXCESS: True, "enqueued": LAUNCHES})
    assert count([lost, fresh, queued]).waiting == 2
    later = datetime.now() + timedelta(seconds=OWED_S + 1)
    assert count([lost, fresh, queued], later).waiting == 0
    retry = optuna.create_trial(state=TrialState.WAITING, system_attrs={
        "failed_trial": 0, "retry_history": [0]})
    copy = optuna.create_trial(state=TrialState.COMPLETE, value=1.0,
                               system_attrs={COPY_OF: 2})
    assert count([lost, fresh, queued, retry, copy]).waiting == 1  # the retry itself


def test_a_worker_rebuilds_the_study_from_its_storage(tmp_path: Path,
                                                      make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    # The enqueued configuration sets what the rules would otherwise reject in a random draw
    # (chunking off below the model's context, fp8 KV on a host without AVX-512), so that it
    # launches whatever the sampler draws for the rest.
    first = {"max_batch_size": 32, "chunked_prefill": True, "kv_cache_dtype": "auto"}
    made = config(tmp_path, "a", db, trials=2, seed=7, sampler="random", time_budget_s=600,
                  enqueue=[first], remeasure_top=0)
    run_search(made, make_ctx(), NullTracker(), StudyProgress())
    _, record = read_record("shared", made.storage_url)
    joined = config_from(record, name="shared", storage=made.storage_url,
                         out_dir=tmp_path / "b", launcher="docker", parallel=2)
    assert joined.workload.read_text() == SMOKE.read_text()
    assert joined.search_space is not None
    assert joined.search_space.is_file()
    assert (joined.engine, joined.trials, joined.seed, joined.sampler, joined.enqueue) == (
        "vllm", 2, 7, "random", [first])
    assert (joined.launcher, joined.parallel, joined.tracking_uri) == (
        "docker", 2, "http://mlflow.invalid")
    assert (joined.remeasure_top, joined.remeasure_repeats) == (0, 2)  # the study's
    assert record.deadline is not None
    assert record.deadline > time.time()
    status = study_status("shared", optuna.load_study(study_name="shared",
                                                      storage=made.storage_url), record)
    assert status.launched == 2
    assert status.running == []
    assert status.time_left_s == 0.0
    assert status.best is not None
    assert any(line.startswith("trials: 2 of 2 done") for line in status.lines())


def test_joining_a_study_that_is_not_there_or_not_tunes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'study.db'}"
    storage_for(url, None)  # a database without that study
    with pytest.raises(ConfigError, match="no such study"):
        read_record("missing", url)
    plain, _ = claim("plain", storage_for(url, None), "random", 0, 1, create=True)
    plain.add_trial(optuna.create_trial(value=1.0))
    with pytest.raises(ConfigError, match="not made by tune"):
        read_record("plain", url)


def test_a_mistyped_sqlite_path_is_bad_input_and_makes_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "tune-runs" / "x" / "stduy.db"
    with pytest.raises(ConfigError, match="no such file"):
        read_record("x", f"sqlite:///{missing}")
    assert not missing.exists()


def test_the_time_left_spreads_the_remaining_trials_over_the_busy_workers() -> None:
    running = [Running(number=5, worker="a:1", elapsed_s=100, defaults=False),
               Running(number=6, worker="b:2", elapsed_s=500, defaults=False)]
    # the longer rest of the running trials (600 - 100), then 3 trials over 2 workers
    assert time_left(600.0, 3, running) == 500 + 2 * 600
    assert time_left(600.0, 3, []) == 3 * 600
    assert time_left(None, 3, running) is None


def test_tune_run_again_with_more_trials_extends_the_study(tmp_path: Path,
                                                            make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    first = StudyProgress()
    run_search(config(tmp_path, "host0", db, trials=2), make_ctx(FakeLauncher(), Slow()),
               NullTracker(), first)
    again = StudyProgress()
    run_search(config(tmp_path, "host0", db, trials=3), make_ctx(FakeLauncher(), Slow()),
               NullTracker(), again)
    study, record = read_record("shared", f"sqlite:///{db}")
    assert ledger(study).launched == 3
    assert record.trials == 3  # what a worker joining now would read
