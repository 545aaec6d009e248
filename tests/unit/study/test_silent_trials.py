"""A running trial that never beat is failed as stale once past the bound (Optuna skips it)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import optuna
import pytest
from optuna.storages import RDBStorage
from optuna.storages._cached_storage import _CachedStorage
from optuna.storages._rdb import models
from optuna.trial import TrialState

from tuner.study.coordination.shared_study import fail_stale
from tuner.study.coordination.silent_trials import NEVER_BEAT_S
from tuner.study.coordination.storage_outage import RetryingStorage

pytestmark = [pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning"),
              pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")]


def started_ago(rdb: RDBStorage, trial_id: int, seconds: float) -> None:
    session = rdb.scoped_session()
    row = session.get(models.TrialModel, trial_id)
    assert row is not None
    row.datetime_start = datetime.now() - timedelta(seconds=seconds)
    session.commit()
    session.close()


def test_a_trial_that_never_beat_is_failed_after_the_bound_not_before(tmp_path: Path) -> None:
    rdb = RDBStorage(f"sqlite:///{tmp_path / 'study.db'}", heartbeat_interval=1,
                     grace_period=4)
    storage = RetryingStorage(_CachedStorage(rdb), "sqlite", retry=False)
    study = optuna.create_study(study_name="s", storage=storage)
    dead = study.ask()  # its worker died before its first beat
    young = study.ask()  # just asked: its first beat is on its way
    beating = study.ask()
    storage.record_heartbeat(beating._trial_id)
    started_ago(rdb, dead._trial_id, NEVER_BEAT_S + 5)
    started_ago(rdb, young._trial_id, 1)
    started_ago(rdb, beating._trial_id, NEVER_BEAT_S + 5)
    fail_stale(study)
    states = {t.number: t.state for t in study.get_trials(deepcopy=False)}
    assert states[dead.number] == TrialState.FAIL
    assert states[young.number] == TrialState.RUNNING
    assert states[beating.number] == TrialState.RUNNING  # its beat is fresh
