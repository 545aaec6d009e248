"""Running trials that never beat: Optuna never takes them for stale.

Optuna fails a running trial whose last heartbeat is older than the grace period, but skips one
that has no heartbeat at all. A worker killed between asking for a trial and its first beat, or
one whose first beat could not be written (the database's disk full, the database away), leaves
such a trial RUNNING for ever, and a study waiting for its running trials waits for ever. A
trial that has been running for longer than :data:`NEVER_BEAT_S` (and its grace period) without
a beat is taken as stale here: a live worker beats as it takes the trial (shared_study's
``Heartbeat``). Its start is the client's clock, as Optuna writes it, compared with this host's:
the margin covers hosts whose clocks differ by less than that, and a live worker beats within
milliseconds of its start (a skewed clock could fail a live trial only in that moment; its
worker then keeps its result on its host, as for any trial failed by its heartbeat).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import TrialState
from sqlalchemy import orm

# Optuna keeps heartbeats in its RDB storage's own tables, behind its cache; no public names.
from tuner.study.coordination.optuna_internals import CachedStorage, TrialModel, scoped_session

NEVER_BEAT_S = 20.0
"""A running trial with no heartbeat this long after its start is its dead worker's."""


def rdb_of(storage: BaseStorage) -> RDBStorage | None:
    """The RDB storage under ``storage`` (Optuna's cache in between), if it is one."""
    if isinstance(storage, CachedStorage):
        storage = storage._backend
    return storage if isinstance(storage, RDBStorage) else None


def never_beat(storage: BaseStorage, study_id: int) -> list[int]:
    """Ids of the study's running trials that never beat, started past the bound."""
    rdb = rdb_of(storage)
    if rdb is None or rdb.heartbeat_interval is None:
        return []
    grace = rdb.grace_period or 2 * rdb.heartbeat_interval
    cutoff = datetime.now() - timedelta(seconds=max(NEVER_BEAT_S, grace))
    with scoped_session(rdb.scoped_session) as session:
        running = (session.query(TrialModel)
                   .options(orm.selectinload(TrialModel.heartbeats))
                   .filter(TrialModel.state == TrialState.RUNNING)
                   .filter(TrialModel.study_id == study_id).all())
        return [int(t.trial_id) for t in running if not t.heartbeats
                and t.datetime_start is not None and t.datetime_start < cutoff]
