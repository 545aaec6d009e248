"""--resolution on the command line wins over the workload's, and says so in one line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tuner.commands.prepare import with_resolution
from tuner.workload import load_workload

DATA = Path(__file__).resolve().parents[2] / "data"


def test_the_command_line_wins_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    workload = load_workload(DATA / "workload-ci.yaml")  # capacity.tolerance: 0.3
    assert workload.capacity.search_resolution() == 0.15
    with caplog.at_level(logging.WARNING):
        tighter = with_resolution(workload, 0.05)
    assert tighter.capacity.search_resolution() == 0.05
    assert [r.getMessage() for r in caplog.records] == [
        "--resolution 0.05 wins over the workload's capacity.tolerance (±0.15)"]
    assert with_resolution(workload, None) is workload
