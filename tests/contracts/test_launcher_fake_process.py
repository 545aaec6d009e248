"""The launcher contract against the fake launcher and the process launcher.

The fake is what the study-loop tests rely on: it has no process, so its case acts the
contract's engine out on the fake handle; this proves the fake behaves like a launcher, not an
engine or a launcher. The process launcher runs the contract's engine as a real local process
(a Python program, started in well under a second)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.contracts.launcher import (
    BAD_OPTION,
    EXIT_CODE,
    GOODBYE,
    SECRET_VAR,
    SERVING,
    UP,
    LauncherCase,
    LauncherContract,
    secret_line,
)
from tests.unit.fakes.launcher import FakeHandle, FakeLauncher
from tuner.launch import EngineHandle, LaunchRequest, ProcessHandle, ProcessLauncher


class FakeCase(LauncherCase):
    def __init__(self) -> None:
        super().__init__()
        self.launcher = FakeLauncher()

    def start(self, request: LaunchRequest) -> EngineHandle:
        handle = super().start(request)
        assert isinstance(handle, FakeHandle)
        handle.say(UP)
        handle.say(secret_line(SECRET_VAR, handle.env.get(SECRET_VAR)))
        if request.config["mode"] == "exit":
            handle.die(EXIT_CODE, BAD_OPTION)
        else:
            handle.say(SERVING)
            handle.last_words = GOODBYE
        return handle

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, FakeHandle)
        handle.kill()


class ProcessCase(LauncherCase):
    def __init__(self) -> None:
        super().__init__()
        self.launcher = ProcessLauncher()

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, ProcessHandle)
        os.kill(handle.pid, signal.SIGKILL)


@pytest.fixture(params=["fake", "process"])
def launcher_case(request: pytest.FixtureRequest) -> Iterator[LauncherCase]:
    case: LauncherCase = FakeCase() if request.param == "fake" else ProcessCase()
    yield case
    case.close()


class TestLaunchers(LauncherContract):
    pass
