"""The unit tests' temporary folders on a RAM file system (``/dev/shm``) when there is one with
room, as if ``PYTEST_DEBUG_TEMPROOT=/dev/shm`` were given.

Why: a study's SQLite storage commits once per Optuna call, and each commit is an fsync; on a
virtual disk that is 5 to 10 ms, and the unit tests' studies make thousands of them (more than a
third of the fast suite's time was spent waiting for them; experiments/test-speed/README.md).
No unit test proves anything about the disk under its temporary folder: a full disk is simulated
there (tests/unit/test_disk_space.py, tests/unit/study/test_disk_full.py), a real full tmpfs is
tests/integration/test_faults.py, and a power cut, the one thing an fsync is for, is no test's.

Pytest's own choice stands when it was made explicitly (``--basetemp``, ``PYTEST_DEBUG_TEMPROOT``
or ``TMPDIR``), or with ``TUNER_TEST_TMP=disk``, or when ``/dev/shm`` is missing or small (a
container's default of 64 MiB): then the folders are where they always were. Pytest still
numbers them and keeps the last three sessions' (``/dev/shm/pytest-of-<user>/``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

RAM = Path("/dev/shm")
ROOM = 1 << 30  # bytes free on the RAM file system, at least (a unit run writes some 100 MiB)


def ram_temp_root() -> Path | None:
    """``/dev/shm`` if the temporary folders may go there, else None."""
    if any(os.environ.get(name) for name in ("PYTEST_DEBUG_TEMPROOT", "TMPDIR")):
        return None
    if os.environ.get("TUNER_TEST_TMP", "") == "disk":
        return None
    try:
        if not (RAM.is_dir() and os.access(RAM, os.W_OK)):
            return None
        return RAM if shutil.disk_usage(RAM).free >= ROOM else None
    except OSError:
        return None


def pytest_configure(config: pytest.Config) -> None:
    # Read by pytest when it makes the session's base folder, at the first use of tmp_path
    # (after collection): early enough from here. Child processes inherit it, unused.
    if config.option.basetemp is None and (root := ram_temp_root()) is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)
