"""The study's storage waits out an outage of its database: a call that cannot reach it is
tried again until it does (said once when it went, once when it came back) or the bound has
passed (one line); other errors are raised at once; a trial's end whose commit landed before
the connection dropped is not taken for another worker's; no trial is failed as stale right
after an outage. The database here is SQLite behind a seam that drops its connection on
demand; a real PostgreSQL restarted under a study is tests/integration/test_outages.py."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.exceptions import StorageInternalError
from optuna.storages import RDBStorage, _CachedStorage
from optuna.trial import TrialState
from sqlalchemy import exc as sa

from tuner.core import StudyError
from tuner.study.coordination import storage_outage
from tuner.study.coordination.storage_outage import RetryingStorage, unreachable, without_waiting

pytestmark = [pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning"),
              pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")]


def dropped() -> StorageInternalError:
    """What Optuna raises when PostgreSQL goes away under a session."""
    error = StorageInternalError("An exception is raised during the commit.")
    error.__cause__ = sa.OperationalError(
        "SELECT 1", None, Exception("server closed the connection unexpectedly"))
    return error


class Flaky(RDBStorage):
    """A real SQLite storage whose calls fail as a lost database would while ``down`` > 0
    (each failing call counts one down)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, heartbeat_interval=1, grace_period=4)
        self.down = 0
        self.landed_then_dropped = False

    def _fail(self) -> None:
        if self.down > 0:
            self.down -= 1
            raise dropped()

    def _get_trials(self, *args: Any, **kwargs: Any) -> list[optuna.trial.FrozenTrial]:
        self._fail()  # what Optuna's cache reads the study's trials with
        return super()._get_trials(*args, **kwargs)

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values: Sequence[float] | None = None) -> bool:
        self._fail()
        done = super().set_trial_state_values(trial_id, state, values)
        if self.landed_then_dropped:  # the commit is in; its answer is lost
            self.landed_then_dropped = False
            raise dropped()
        return done


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def storage(tmp_path: Path, clock: Clock, **kw: Any) -> tuple[RetryingStorage, Flaky]:
    flaky = Flaky(f"sqlite:///{tmp_path / 'study.db'}")
    return RetryingStorage(_CachedStorage(flaky), "postgresql://tuner:***@db/tuner",
                           clock=clock, sleep=clock.sleep, **kw), flaky


def study_on(store: RetryingStorage) -> optuna.Study:
    return optuna.create_study(study_name="s", storage=store)


def test_an_outage_is_waited_out_and_said_once_each_way(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    study.enqueue_trial({"x": 1.0})
    flaky.down = 5
    with caplog.at_level(logging.WARNING, logger="tuner"):
        assert len(study.get_trials()) == 1
    assert flaky.down == 0
    assert clock.slept == [0.5, 1.0, 2.0, 4.0, 8.0]  # growing pauses
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tuner")]
    assert len(said) == 2, said
    assert said[0].startswith("study storage postgresql://tuner:***@db/tuner unreachable "
                              "(server closed the connection unexpectedly)")
    assert said[1] == ("study storage postgresql://tuner:***@db/tuner is back after 16s; the "
                       "study goes on")


def test_a_trial_that_ends_during_the_outage_is_told_once_it_is_back(tmp_path: Path) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    flaky.down = 3
    study.tell(trial, 0.5)
    assert [t.state for t in study.get_trials()] == [TrialState.COMPLETE]
    assert study.trials[0].value == 0.5


def test_past_the_bound_the_study_stops_with_one_line(tmp_path: Path) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock, outage_s=30)
    study = study_on(store)
    flaky.down = 10**6
    with pytest.raises(StudyError) as err:
        study.get_trials()
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("study storage postgresql://tuner:***@db/tuner unreachable for ")
    assert text.endswith("run the same command again once it is back")
    assert 30 <= clock.now < 45


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    clock = Clock()
    store, _ = storage(tmp_path, clock)
    with pytest.raises(KeyError):
        store.get_study_id_from_name("no such study")
    assert clock.slept == []


def test_sqlite_is_not_retried(tmp_path: Path) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock, retry=False)
    study = study_on(store)
    flaky.down = 1
    with pytest.raises(StorageInternalError):
        study.get_trials()
    assert clock.slept == []


def test_without_waiting_a_call_is_tried_once_and_others_still_wait(tmp_path: Path) -> None:
    """An interrupted trial's give-back must not wait out the outage: the interrupt stops the
    study now (the trial's missed heartbeats give it back later)."""
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    flaky.down = 2
    with without_waiting(store), pytest.raises(StorageInternalError):
        study.get_trials()
    assert clock.slept == []
    assert len(study.get_trials()) == 0  # outside, the call waits the outage out again
    assert clock.slept == [0.5]


def test_an_end_whose_commit_landed_is_taken_as_told(tmp_path: Path) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    flaky.landed_then_dropped = True
    study.tell(trial, 0.25)  # no UpdateFinishedTrialError: it was this worker's own write
    assert study.trials[0].state == TrialState.COMPLETE
    assert study.trials[0].value == 0.25


def test_no_trial_is_failed_as_stale_right_after_an_outage(tmp_path: Path) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    assert store.settled()
    flaky.down = 2
    study.get_trials()  # the outage, waited out (1.5 s of pauses)
    assert not store.settled()
    assert store._get_stale_trial_ids(study._study_id) == []
    clock.now += storage_outage.GRACE_BEATS * 1  # every worker had its grace to beat again
    assert store.settled()


@pytest.mark.parametrize(("error", "expected"), [
    (dropped(), True),
    (sa.InterfaceError("SELECT 1", None, Exception("connection already closed")), True),
    (sa.IntegrityError("INSERT", None, Exception("duplicate key")), False),
    (ValueError("bad value"), False),
])
def test_what_counts_as_the_database_gone(error: BaseException, expected: bool) -> None:
    assert unreachable(error) is expected


def test_heartbeats_are_tried_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    store, flaky = storage(tmp_path, clock)
    study = study_on(store)
    trial = study.ask()
    calls: list[int] = []

    def beat(trial_id: int) -> None:
        calls.append(trial_id)
        raise dropped()

    monkeypatch.setattr(flaky, "record_heartbeat", beat)  # a beat into the outage
    with pytest.raises(StorageInternalError):
        store.record_heartbeat(trial._trial_id)
    assert calls == [trial._trial_id]
    assert clock.slept == []
