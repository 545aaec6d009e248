"""Optuna's private names that the study's storage uses (tuner/study/coordination/
optuna_internals.py) still are what that module says; an Optuna upgrade that changes one fails
here, naming the module to check again, before a study meets it."""

from __future__ import annotations

import inspect

import optuna
from optuna.storages import BaseStorage, RDBStorage
from sqlalchemy import orm

from tuner.study.coordination import optuna_internals as internals
from tuner.study.coordination.storage_outage import RetryingStorage

RECHECK = "check tuner/study/coordination/optuna_internals.py against this Optuna"


def test_the_installed_optuna_is_one_the_private_names_were_checked_on() -> None:
    minor = ".".join(optuna.__version__.split(".")[:2])
    assert minor in internals.CHECKED_ON, (
        f"Optuna {optuna.__version__}: {RECHECK}, then add {minor} to CHECKED_ON")


def test_each_private_name_has_the_shape_the_storage_uses() -> None:
    assert issubclass(internals.CachedStorage, BaseStorage), RECHECK
    assert issubclass(internals.CachedStorage, internals.BaseHeartbeat), RECHECK
    assert issubclass(RDBStorage, internals.BaseHeartbeat), RECHECK
    beats = {"record_heartbeat", "_get_stale_trial_ids", "get_heartbeat_interval",
             "get_heartbeat_stale_trial_callback"}
    assert beats <= set(dir(internals.BaseHeartbeat)), RECHECK
    orm.configure_mappers()  # the heartbeats relation is a backref, made with the mappers
    for column in ("state", "study_id", "heartbeats", "datetime_start"):
        assert hasattr(internals.TrialModel, column), f"TrialModel.{column}: {RECHECK}"
    assert list(inspect.signature(internals.scoped_session).parameters)[0] == "scoped_session"
    assert {"study_name", "directions"} <= set(inspect.signature(internals.FrozenStudy)
                                              .parameters), RECHECK


def test_a_cached_rdb_storage_shows_its_backend(tmp_path: object) -> None:
    rdb = RDBStorage(f"sqlite:///{tmp_path}/s.db")
    cached = internals.CachedStorage(rdb)
    assert cached._backend is rdb, RECHECK
    assert issubclass(RetryingStorage, internals.BaseHeartbeat)
