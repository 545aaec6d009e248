"""The launcher contract against the Docker launcher: the contract's engine in a container of
the test image, through a real Docker daemon (skipped, with the reason, when none is
reachable)."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.contracts.launcher import LauncherCase, LauncherContract
from tuner.launch import ContainerHandle, DockerLauncher, EngineHandle

pytestmark = pytest.mark.integration


class DockerCase(LauncherCase):
    def __init__(self, client: docker.DockerClient) -> None:
        super().__init__()
        self.launcher = DockerLauncher()
        self.client = client

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, ContainerHandle)
        self.client.containers.get(handle.container_id).kill()


@pytest.fixture(params=["docker"])
def launcher_case(request: pytest.FixtureRequest, client: docker.DockerClient, image: str
                  ) -> Iterator[LauncherCase]:
    case = DockerCase(client)
    yield case
    case.close()


class TestLaunchers(LauncherContract):
    pass
