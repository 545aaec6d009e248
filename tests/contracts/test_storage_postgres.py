"""Optuna's storage contract against the study's storage over PostgreSQL: one throwaway server
and one database for the module (its tables made by the storage once), emptied before each
test; each test opens a storage of its own on it."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from optuna.storages import BaseStorage

from tests.contracts.storage import RetryingStorageContract, close_storage, open_storage
from tests.integration.conftest import Postgres

pytestmark = pytest.mark.integration

KEEP = ("alembic_version", "version_info")
"""The schema's own tables: they say which version the tables are, not what a study holds."""


@pytest.fixture(scope="module")
def database(postgres: Postgres) -> str:
    url = postgres.create_database("contract")
    close_storage(open_storage(url))
    return url


def empty(url: str) -> None:
    """Every study, trial and attribute gone, the ids starting at 1 again."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            if row[0] not in KEEP]
        conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


@pytest.fixture
def storage(database: str) -> Iterator[BaseStorage]:
    empty(database)
    opened = open_storage(database)
    yield opened
    close_storage(opened)


class TestRetryingStorageOverPostgres(RetryingStorageContract):
    pass
