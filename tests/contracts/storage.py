"""The study's storage under Optuna's own storage contract.

Optuna ships the test cases every storage of its own passes (``optuna.testing.pytest_storages.
StorageTestCase``: studies, trials, attributes, states, best trial, pickling, ...); a module
subclasses it and gives a ``storage`` fixture, a fresh, empty storage per test. Here the
storage is the tuner's own, as :func:`tuner.study.coordination.shared_study.storage_for` builds
it for a shared study: :class:`~tuner.study.coordination.storage_outage.RetryingStorage` over
Optuna's cache over its RDB storage, with heartbeats. (``optuna.testing.storages.
StorageSupplier`` is not used: it builds Optuna's storages, not this one, and imports fakeredis,
which is not installed.)
"""

from __future__ import annotations

from optuna.storages import BaseStorage, RDBStorage
from optuna.testing.pytest_storages import StorageTestCase

from tuner.study.coordination import CachedStorage, RetryingStorage, storage_for

HEARTBEAT_S = 60
"""A shared study's storage beats; no test here waits for a beat."""

def open_storage(url: str) -> RetryingStorage:
    storage = storage_for(url, HEARTBEAT_S)
    assert isinstance(storage, RetryingStorage)
    return storage


def close_storage(storage: BaseStorage) -> None:
    """Give back the storage's connections (each test opens one of its own)."""
    assert isinstance(storage, RetryingStorage)
    cached = storage.backend
    assert isinstance(cached, CachedStorage)
    rdb = cached._backend
    assert isinstance(rdb, RDBStorage)
    rdb.engine.dispose()


class RetryingStorageContract(StorageTestCase):
    """Optuna's storage cases, with the one RetryingStorage fails marked (strict: it is
    noticed when fixed)."""

    """Optuna's storage cases, as they are."""
