"""A study on a SQLite file: the file a URL names, and claims of its queued trials made one at
a time.

Optuna claims a queued trial by reading its state and writing RUNNING in one transaction, the
read ``SELECT ... FOR UPDATE``. PostgreSQL locks the row at that read; SQLite ignores
``FOR UPDATE`` and locks the database only at the write, so two workers that read WAITING at
the same moment both win and both run the trial (seen in CI: a re-measurement unit measured
twice). On a SQLite file a claim holds an exclusive lock on a file beside the database
(``study.db.claims``), so the later claimant reads RUNNING and loses, as on PostgreSQL. The
lock (``flock``) holds between processes and between threads of one process alike.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None: another database, or SQLite in memory)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def claims_lock(url: str) -> Path | None:
    """The lock file for claims on ``url``'s study: beside a SQLite file; None for an
    in-memory SQLite database or a server database (which locks the row itself)."""
    database = sqlite_file(url)
    return None if database is None else database.with_name(database.name + ".claims")


@contextmanager
def one_claim_at_a_time(lock: Path | None) -> Iterator[None]:
    """Hold ``lock`` (exclusively) for the duration; no lock, no wait."""
    if lock is None:
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
