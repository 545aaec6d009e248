"""The measurer contract against the fake measurer with fake launcher handles, the pair the
study-loop tests drive every outcome path with. The fake has no engine: its case starts fake
engines with the behaviour each kind needs (``tests/unit/fakes/launcher.py``), and a killed one
is one that crashes when measured. This proves the fake keeps the contract the loop relies on,
not that any engine is measured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contracts.measurer import Engine, MeasurerCase, MeasurerContract
from tests.unit.fakes.launcher import Behaviour, FakeHandle, FakeLauncher, FakeMeasurer
from tuner.engines import load_engine_spec
from tuner.launch import EngineHandle, LaunchRequest
from tuner.study import Measurer

BEHAVIOUR: dict[Engine, Behaviour] = {"serving": "serve", "exits_at_start": "exit_before_ready",
                                      "off_workload": "probe_fails"}


class FakeCase(MeasurerCase):
    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.spec = load_engine_spec("vllm")

    def start(self, engine: Engine) -> tuple[Measurer, EngineHandle]:
        launcher = FakeLauncher(behaviour=BEHAVIOUR[engine])
        handle = launcher.start(LaunchRequest(
            spec=self.spec, config={"max_num_seqs": 64}, model="tiny-llama",
            served_name="tiny-llama", log_path=self.folder / f"{len(self.handles)}.log"))
        self.handles.append(handle)
        return FakeMeasurer(), handle

    def kill(self, handle: EngineHandle) -> None:
        assert isinstance(handle, FakeHandle)
        handle.kill()
        handle.behaviour = "crash_under_load"  # how the fake measurer knows an engine is gone

    def kill_under_load(self, handle: EngineHandle) -> None:
        assert isinstance(handle, FakeHandle)
        handle.behaviour = "crash_under_load"


@pytest.fixture
def measurer_case(tmp_path: Path) -> Iterator[MeasurerCase]:
    case = FakeCase(tmp_path)
    yield case
    case.close()


class TestFakeMeasurer(MeasurerContract):
    """FakeMeasurer on FakeLauncher handles."""
