"""Optuna's storage contract against the study's storage over SQLite: a file per test, copied
from one whose tables the storage made (making them takes a third of a second)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from optuna.storages import BaseStorage

from tests.contracts.storage import RetryingStorageContract, close_storage, open_storage


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with the storage's tables and nothing in them."""
    path = tmp_path_factory.mktemp("storage") / "empty.db"
    close_storage(open_storage(f"sqlite:///{path}"))
    return path


@pytest.fixture
def storage(empty_db: Path, tmp_path: Path) -> Iterator[BaseStorage]:
    path = tmp_path / "study.db"
    shutil.copyfile(empty_db, path)
    opened = open_storage(f"sqlite:///{path}")
    yield opened
    close_storage(opened)


class TestRetryingStorageOverSqlite(RetryingStorageContract):
    pass
