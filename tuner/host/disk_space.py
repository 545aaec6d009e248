"""The run folder's disk: files written whole or not at all, and a full disk told in one line.

A study writes its trials, records and summary into its run folder for hours; the disk under it
may fill (other jobs, a small quota). A file is written beside its final name and renamed into
place (:func:`write_atomic`), so a full disk or a kill never leaves half a trial's JSON that the
next run would choke on. A full disk is not a configuration's failure: the trial that met it is
given back to the study, which stops with one line (:func:`no_space`) naming the folder and the
fix; its finished trials stay in the storage and on disk, and the same command run again after
freeing space resumes it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from tuner.core import OutOfSpace

NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
SQLITE_FULL = "database or disk is full"
MIN_FREE_BYTES = 8 * 2**20
"""A trial does not start with less free space than this under the run folder: its engine log,
records and result need about that, and an engine that cannot write its log fails in ways that
would be blamed on its configuration."""


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a full disk: ENOSPC or EDQUOT from the OS, or
    SQLite's "database or disk is full"."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OutOfSpace):
            return True
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return True
        if SQLITE_FULL in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def no_space(folder: Path, detail: str = "") -> OutOfSpace:
    """The one line a study stopped by a full disk ends with."""
    why = f" ({detail})" if detail else ""
    return OutOfSpace(f"no space left on the device of {folder}{why}: the study stopped; its "
                      f"finished trials are kept in its storage and in {folder / 'trials'}; "
                      "free space there and run the same command again to resume")


def what_filled(exc: BaseException) -> str:
    """The file or store whose write met the full disk, in a few words."""
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return f"writing {current.filename}" if current.filename else "writing"
        if SQLITE_FULL in str(current) and not isinstance(current, OutOfSpace):
            return "the SQLite database: database or disk is full"
        current = current.__cause__ or current.__context__
    return ""


@contextlib.contextmanager
def stops_when_full(folder: Path) -> Iterator[None]:
    """A full disk met anywhere in the block (a trial's records, the tracker's outbox, the
    study's summary, a SQLite storage in the folder) ends it with the one line of
    :func:`no_space`."""
    try:
        yield
    except OutOfSpace:
        raise
    except Exception as exc:
        if out_of_space(exc):
            raise no_space(folder, what_filled(exc)) from exc
        raise


def free_bytes(folder: Path) -> int:
    """Free bytes on the device of ``folder`` (its nearest existing parent)."""
    here = folder
    while not here.exists() and here != here.parent:
        here = here.parent
    return shutil.disk_usage(here).free


def check_free(folder: Path, least: int = MIN_FREE_BYTES) -> None:
    """Raise :class:`OutOfSpace` when the device of ``folder`` has less than ``least`` free."""
    free = free_bytes(folder)
    if free < least:
        raise no_space(folder, f"{free // 1024} KiB free, a trial needs {least // 2**20} MiB")


@contextlib.contextmanager
def atomic_open(path: Path, *, newline: str | None = None) -> Iterator[IO[str]]:
    """A text file opened beside ``path`` and renamed onto it once the block ends without an
    error; on an error (a full disk) it is removed and ``path`` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (see :func:`atomic_open`)."""
    with atomic_open(path) as fh:
        fh.write(text)
