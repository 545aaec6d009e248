"""TEST ONLY: engines for `tune` processes that tests start, in place of the real ones.

``make``: the fake engine of tests/unit/fakes,
so that several tuner processes can run one shared study through a real PostgreSQL and a real
MLflow server in seconds. Each trial holds its fake engine for ``TUNER_FAKE_TRIAL_S`` seconds
(default 1). It proves nothing about engines; what it lets a test prove is the sharing of a
study between processes.

``standin``: the real process launcher and the
real measurer, the launcher starting the stand-in engine (tests/integration/standin_engine.py,
a real process serving a real HTTP API) where the spec names vLLM: every fault around a trial
(its process stopped, slow to start, its port taken, a full disk) happens to real processes,
sockets and files, in seconds.

Each is an engine factory of the composition root (:data:`tuner.commands.prepare.EngineFactory`),
given to ``tune`` by tests/integration/fake_tune.py."""

from __future__ import annotations

import dataclasses
import os
import time

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tuner.core import Settings
from tuner.launch import EngineHandle, LaunchRequest, ProcessHandle, ProcessLauncher
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult
from tuner.study import StudyConfig


class PacedMeasurer(FakeMeasurer):
    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        time.sleep(float(os.environ.get("TUNER_FAKE_TRIAL_S", "1")))
        return super().capacity(handle, accelerators)


def make(cfg: StudyConfig, settings: Settings) -> tuple[FakeLauncher, PacedMeasurer]:
    return FakeLauncher(), PacedMeasurer()


STANDIN_ARGV = ["{python}", "-m", "tests.integration.standin_engine", "--model", "{model}",
                "--served-model-name", "{served_name}", "--host", "{host}", "--port", "{port}"]


class StandinLauncher(ProcessLauncher):
    """The process launcher, starting the stand-in engine with the trial's rendered knobs."""

    def start(self, request: LaunchRequest) -> ProcessHandle:
        spec = request.spec
        assert spec.process is not None
        process = spec.process.model_copy(update={"argv": STANDIN_ARGV})
        return super().start(dataclasses.replace(
            request, spec=spec.model_copy(update={"process": process})))


def standin(cfg: StudyConfig, settings: Settings) -> tuple[StandinLauncher, None]:
    """The stand-in engine with the real measurer (None: the tuner's own)."""
    return StandinLauncher(), None

