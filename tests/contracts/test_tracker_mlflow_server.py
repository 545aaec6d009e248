"""The tracker contract against the MLflow tracker on a real ``mlflow server`` of 127.0.0.1
(a SQLite store behind it, its artifacts served through it), the way a shared study's hosts
reach one tracking server.

The server is started once for the module: ``tracking`` (tests/integration/conftest.py)
starts one per test, 12-20 s each here; this uses the same :class:`MlflowServer`, and kills it
at the end (its graceful shutdown takes seconds more). Its outage is the server stopped by
SIGSTOP (it accepts connections and answers nothing) and continued after."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contracts.tracker import TrackerOutageContract
from tests.contracts.tracker_mlflow import MlflowCase
from tests.integration.conftest import MlflowServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    folder = tmp_path_factory.mktemp("mlflow-server")
    started = MlflowServer(f"sqlite:///{folder / 'store.db'}", folder)
    started.start()
    try:
        yield started
    finally:
        if started.process is not None:  # nothing in it is kept: killed, not shut down
            with contextlib.suppress(ProcessLookupError):
                os.killpg(started.process.pid, signal.SIGKILL)
        started.stop()


@pytest.fixture
def tracker_case(server: MlflowServer, tmp_path: Path) -> MlflowCase:
    return MlflowCase(tmp_path / "runs", server.url, server=server)


class TestMlflowTrackerOnAServer(TrackerOutageContract):
    pass
