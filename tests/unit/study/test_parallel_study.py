"""The study loop with the real ``run_trial`` on a fake launcher: parallel trials hold
disjoint GPUs, and the defaults trial tells Optuna only what was set."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.host import Gpu, Hardware
from tuner.launch import EngineHandle
from tuner.study.config import StudyConfig
from tuner.study.loop import run_search
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker

HW = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=1024, numa_nodes=2,
              gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=str(i)) for i in range(8)])


class SlowMeasurer(FakeMeasurer):
    """Holds each engine (and its GPUs) until a second engine is held beside it, and watches
    for shared devices. Waiting for the overlap, not sleeping, makes it independent of how
    busy the machine is; a study that never runs two trials at once ends the wait once."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[int, list[int]] = {}
        self.clashes: list[list[int]] = []
        self.peak = 0
        self.guard = threading.Lock()
        self.overlapped = threading.Event()
        self.gave_up = threading.Event()

    def capacity(self, handle: EngineHandle, accelerators: int):  # type: ignore[no-untyped-def]
        devices = handle.request.devices  # type: ignore[attr-defined]
        assert len(devices) == accelerators
        with self.guard:
            if any(set(devices) & set(d) for d in self.held.values()):
                self.clashes.append(devices)
            self.held[id(handle)] = devices
            self.peak = max(self.peak, len(self.held))
            if len(self.held) > 1:
                self.overlapped.set()
        if not self.gave_up.is_set() and not self.overlapped.wait(timeout=60):
            self.gave_up.set()
        with self.guard:
            del self.held[id(handle)]
        return super().capacity(handle, accelerators)


@pytest.mark.slow
def test_parallel_trials_hold_disjoint_gpus(tmp_path: Path, make_ctx: MakeContext) -> None:
    launcher, measurer = FakeLauncher(), SlowMeasurer()
    ctx = make_ctx(launcher, measurer, hardware=HW)
    cfg = StudyConfig(engine="vllm", workload=SMOKE, model="/m", trials=12, parallel=4,
                      out_dir=tmp_path, study_name="par")
    state = StudyProgress()
    study = run_search(cfg, ctx, NullTracker(), state)
    launched = [r for r in state.results if not r.rejected_before_launch]
    assert len(launched) == 12
    assert measurer.clashes == []
    assert measurer.peak > 1
    assert sum(r.defaults for r in state.results) == 1
    assert len(study.trials) == len(state.results)
    assert launcher.running == set()


def test_the_defaults_trial_tells_optuna_only_what_was_set(tmp_path: Path,
                                                          make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    ctx = make_ctx(launcher, engine="llamacpp")
    cfg = StudyConfig(engine="llamacpp", workload=SMOKE, model="/m", trials=2,
                      out_dir=tmp_path, study_name="defaults")
    state = StudyProgress()
    study = run_search(cfg, ctx, NullTracker(), state)
    first = study.trials[0]
    assert first.user_attrs["defaults"]
    assert launcher.started[0].request.config == {}
    result = next(r for r in state.results if r.number == first.number)
    assert result.config == ctx.spec.defaults("cpu")
    assert result.config["threads"] is None
    assert "threads" not in first.params  # null: the engine decides, so Optuna was told nothing
    assert first.params == ctx.space.legal_defaults(ctx.spec.defaults("cpu"))
    assert all(result.config[k] == v for k, v in first.params.items())
