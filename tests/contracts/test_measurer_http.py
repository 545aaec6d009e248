"""The measurer contract against the HTTP measurer (the real one) on the stand-in engine
(tests/integration/standin_engine.py): a real process, started by the real process launcher
(``StandinLauncher``), serving a real OpenAI-style HTTP API whose completions stream in
milliseconds, measured with a short workload (tests/data/workload-faults.yaml). What makes an
engine of each kind is done to the real process: an engine that exits at start is the stand-in
given a setting it cannot read; one that does not serve the workload is asked for a route it
lacks (chat); a death is SIGKILL, under load once its log shows it serving the search's
requests."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contracts.measurer import Engine, MeasurerCase, MeasurerContract
from tests.integration.fake_engine import StandinLauncher
from tuner.engines import EngineSpec, load_engine_spec
from tuner.launch import EngineHandle, LaunchRequest, ProcessHandle
from tuner.models import synthetic_corpus, train_tokenizer
from tuner.study import HttpMeasurer, Measurer
from tuner.workload import Workload, load_workload

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"
SERVED = "tiny-llama"
REQUEST_LINE = "POST /v1/completions"
UNDER_LOAD = 6
"""Requests the engine has logged when it is killed under load (readiness sends one, the
bench's probe one or two)."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder with only a tokenizer (the stand-in has no weights), trained here."""
    folder = tmp_path_factory.mktemp("standin-model")
    train_tokenizer(synthetic_corpus(0), 4096)[0].save(str(folder / "tokenizer.json"))
    return folder


def short(workload: Workload) -> Workload:
    """``workload`` searched in one step, after the fixed warm-up request only."""
    return workload.model_copy(update={
        "capacity": workload.capacity.model_copy(update={"max_steps": 1}),
        "warmup": workload.warmup.model_copy(update={
            "engine": workload.warmup.engine.model_copy(update={"enabled": False})})})


class HttpCase(MeasurerCase):
    def __init__(self, model: Path, folder: Path) -> None:
        super().__init__()
        self.model, self.folder = model, folder
        self.launcher = StandinLauncher()
        self.spec: EngineSpec = load_engine_spec("vllm")
        self.workload: Workload = short(load_workload(DATA / "workload-faults.yaml"))
        self.watchers: list[threading.Thread] = []

    def measurer(self, workload: Workload) -> HttpMeasurer:
        return HttpMeasurer(spec=self.spec, workload=workload, served_name=SERVED,
                            tokenizer=self.model, startup_timeout_s=60.0)

    def start(self, engine: Engine) -> tuple[Measurer, EngineHandle]:
        request = LaunchRequest(spec=self.spec, config={}, model=str(self.model),
                                served_name=SERVED,
                                log_path=self.folder / f"engine-{len(self.handles)}.log")
        with pytest.MonkeyPatch.context() as env:
            if engine == "exits_at_start":
                env.setenv("STANDIN_LOAD_S", "a while")  # float("a while"): it exits at once
            handle = self.launcher.start(request)
        self.handles.append(handle)
        workload = self.workload
        if engine == "off_workload":
            workload = workload.model_copy(update={"api": "chat"})
        return self.measurer(workload), handle

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, ProcessHandle)
        os.kill(handle.pid, signal.SIGKILL)

    def kill_under_load(self, handle: EngineHandle) -> None:
        def watch() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and handle.exit_code() is None:
                if handle.log_text().count(REQUEST_LINE) >= UNDER_LOAD:
                    self.kill(handle)
                    return
                time.sleep(0.02)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        self.watchers.append(watcher)

    def close(self) -> None:
        for handle in self.handles:
            if handle.exit_code() is None:
                handle.stop(grace_s=1.0)
        super().close()
        for watcher in self.watchers:
            watcher.join(timeout=5)


@pytest.fixture
def measurer_case(model: Path, tmp_path: Path) -> Iterator[MeasurerCase]:
    case = HttpCase(model, tmp_path)
    yield case
    case.close()


class TestHttpMeasurer(MeasurerContract):
    """HttpMeasurer against the stand-in engine, a real HTTP server process."""
