"""A study's trial context on a fake launcher and measurer (the seams of tuner.study)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tuner.engines import ModelInfo, load_engine_spec
from tuner.host import Hardware
from tuner.launch import GpuPool
from tuner.loadgen import NULL_PROGRESS
from tuner.study.coordination.shared_study import storage_for
from tuner.study.outcome import TrialResult
from tuner.study.repeats.remeasure import RemeasureOutcome
from tuner.study.repeats.remeasure_loop import take_units
from tuner.study.repeats.remeasure_round import assemble, open_round, plan_for
from tuner.study.space import load_search_space
from tuner.study.trial import TrialContext
from tuner.workload import load_workload

REPO = Path(__file__).resolve().parents[3]
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=8, memory_gib=32, numa_nodes=1, gpus=[])
MODEL = ModelInfo(path="/m", architecture=None, attention_heads=32, kv_heads=8,
                  max_model_len=8192, layers=32, hidden_size=4096)
SMOKE = REPO / "experiments" / "workloads" / "smoke.yaml"
MakeContext = Callable[..., TrialContext]


@pytest.fixture
def make_ctx(tmp_path: Path) -> MakeContext:
    def make(launcher: FakeLauncher | None = None, measurer: FakeMeasurer | None = None, *,
             engine: str = "vllm", hardware: Hardware = CPU, **over: Any) -> TrialContext:
        spec = load_engine_spec(engine)
        pool = (GpuPool([g.index for g in hardware.gpus], tmp_path / "locks")
                if hardware.gpus else None)
        return TrialContext(spec=spec, space=load_search_space(engine).for_host(hardware, MODEL),
                            workload=load_workload(SMOKE), hardware=hardware, model=MODEL,
                            model_ref="/m", served_name="m",
                            launcher=launcher or FakeLauncher(),
                            measurer=measurer or FakeMeasurer(), run_dir=tmp_path / "run",
                            progress=NULL_PROGRESS, gpu_pool=pool, **over)
    return make


def remeasure_here(ctx: TrialContext, results: list[TrialResult], storage_url: str, *,
                   top: int, repeats: int, seed: int = 0) -> RemeasureOutcome:
    """One process re-measuring ``results`` through a round in ``storage_url``, as a study
    on one host does."""
    round_ = open_round(storage_for(storage_url, 1), "study.remeasure",
                        lambda: plan_for(ctx.spec.name, results, top=top, repeats=repeats,
                                         seed=seed,
                                         usd_per_hour=ctx.workload.cost.usd_per_hour_for))
    return assemble(round_, take_units(ctx, round_, beat_s=1.0, poll_s=0.1))
