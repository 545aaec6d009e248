"""The launcher contract against the fake launcher: the fake that the study-loop tests rely
on behaves like a launcher. The fake has no process, so its case acts the contract's engine
out on the fake handle; this proves the fake, not an engine or a launcher."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.launcher_contract import (
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
from tuner.launch.base import EngineHandle, LaunchRequest


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


@pytest.fixture
def launcher_case() -> Iterator[LauncherCase]:
    case = FakeCase()
    yield case
    case.close()


class TestFakeLauncher(LauncherContract):
    pass
