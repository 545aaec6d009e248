"""An engine whose port another program took before it bound it is started again on another
port; any other start failure stays the trial's outcome."""

from __future__ import annotations

import pytest

from tests.unit.fakes.launcher import FakeHandle, FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import MakeContext
from tuner.core import EngineStartError
from tuner.launch import EngineHandle, port_taken
from tuner.study.trial import run_trial

TAKEN = ("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 41237): "
         "address already in use")


class PortThief(FakeMeasurer):
    """The first ``times`` starts lose their port."""

    def __init__(self, times: int) -> None:
        self.times = times

    def wait_ready(self, handle: EngineHandle) -> float:
        assert isinstance(handle, FakeHandle)
        if self.times:
            self.times -= 1
            handle.die(1, TAKEN)
            raise EngineStartError("engine exited with code 1 before it was ready",
                                   outcome="crashed", exit_code=1, log_tail=handle.log_tail())
        return super().wait_ready(handle)


@pytest.mark.parametrize("line", [
    TAKEN,
    "Error: Address already in use (os error 98)",                          # TGI's router
    "main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 41237",  # llama-server
])
def test_port_taken_lines_of_each_engine(line: str) -> None:
    assert port_taken(f"loading\n{line}\n")


def test_a_lost_port_is_retried_on_a_fresh_start(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    result = run_trial(make_ctx(launcher, PortThief(times=1)), 1, {}, defaults=True)
    assert result.outcome == "ok"
    assert len(launcher.started) == 2
    assert all(h.stops == 1 for h in launcher.started)


def test_retries_are_bounded(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    result = run_trial(make_ctx(launcher, PortThief(times=5)), 1, {}, defaults=True)
    assert result.outcome == "crashed"
    assert len(launcher.started) == 3


def test_other_start_failures_are_not_retried(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher(behaviour="exit_before_ready")
    result = run_trial(make_ctx(launcher, FakeMeasurer()), 1, {}, defaults=True)
    assert result.outcome == "invalid_config"
    assert len(launcher.started) == 1
