"""The launcher contract against the real launchers: local processes, and containers through
a real Docker daemon (skipped, with the reason, when none is reachable)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import docker
import pytest

from tests.launcher_contract import LauncherCase, LauncherContract
from tuner.launch.base import EngineHandle
from tuner.launch.docker import ContainerHandle, DockerLauncher
from tuner.launch.process import ProcessHandle, ProcessLauncher

pytestmark = pytest.mark.integration


class ProcessCase(LauncherCase):
    def __init__(self) -> None:
        super().__init__()
        self.launcher = ProcessLauncher()

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, ProcessHandle)
        os.kill(handle.pid, signal.SIGKILL)


class DockerCase(LauncherCase):
    def __init__(self, client: docker.DockerClient) -> None:
        super().__init__()
        self.launcher = DockerLauncher()
        self.client = client

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, ContainerHandle)
        self.client.containers.get(handle.container_id).kill()


@pytest.fixture(params=["process", "docker"])
def launcher_case(request: pytest.FixtureRequest) -> Iterator[LauncherCase]:
    case: LauncherCase
    if request.param == "docker":
        request.getfixturevalue("image")
        case = DockerCase(request.getfixturevalue("client"))
    else:
        case = ProcessCase()
    yield case
    case.close()


class TestLaunchers(LauncherContract):
    pass
