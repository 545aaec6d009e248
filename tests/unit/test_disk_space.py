"""The run folder's disk: a file is written whole or not at all, a full disk is recognised
wherever it surfaces (the OS, SQLite) and told in one line. A real full tmpfs under a study is
tests/integration/test_faults.py."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import exc as sa

from tuner.core import OutOfSpace
from tuner.host import atomic_open, check_free, disk_space, no_space, out_of_space, write_atomic


def full() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", "trials/trial-003.json")


@pytest.mark.parametrize("exc", [
    full(),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    sa.OperationalError("INSERT", None, sqlite3.OperationalError("database or disk is full")),
    OutOfSpace("no space"),
])
def test_a_full_disk_is_recognised(exc: BaseException) -> None:
    assert out_of_space(exc)


def test_a_full_disk_under_another_error_is_recognised() -> None:
    outer = RuntimeError("could not write the trial")
    outer.__cause__ = full()
    assert out_of_space(outer)


@pytest.mark.parametrize("exc", [OSError(errno.EACCES, "Permission denied"),
                                 ValueError("no space left in the batch")])
def test_other_errors_are_not_a_full_disk(exc: BaseException) -> None:
    assert not out_of_space(exc)


def test_a_write_that_fails_leaves_the_old_file_and_no_half_file(tmp_path: Path) -> None:
    path = tmp_path / "trials" / "trial-000.json"
    write_atomic(path, '{"number": 0}')

    def half_written() -> None:
        with atomic_open(path) as fh:
            fh.write('{"num')
            raise full()

    with pytest.raises(OSError, match="No space"):
        half_written()
    assert path.read_text() == '{"number": 0}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["trial-000.json"]


def test_a_write_that_ends_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_atomic(path, "old")
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_too_little_free_space_is_one_line_naming_the_folder_and_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_space, "free_bytes", lambda folder: 3 * 1024)
    with pytest.raises(OutOfSpace) as err:
        check_free(tmp_path / "run")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"no space left on the device of {tmp_path / 'run'} (3 KiB free")
    assert "free space there and run the same command again to resume" in text


def test_enough_free_space_passes(tmp_path: Path) -> None:
    check_free(tmp_path / "not" / "made" / "yet", least=1)


def test_the_line_names_where_the_finished_trials_are(tmp_path: Path) -> None:
    assert f"in its storage and in {tmp_path / 'trials'}" in str(no_space(tmp_path))
