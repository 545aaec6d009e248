"""Parallel trials at the study seam: the trial runner is replaced by one that only holds its
GPUs for a while, so the loop, the GPU pool and Optuna's storage are what is tested."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tuner.engines.model_info import ModelInfo
from tuner.engines.spec import load_engine_spec
from tuner.hardware import Gpu, Hardware
from tuner.launch.gpus import GpuPool
from tuner.progress import NULL_PROGRESS
from tuner.search import study as study_module
from tuner.search.config import TuneConfig
from tuner.search.outcome import TrialResult
from tuner.search.space import load_search_space
from tuner.search.study import StudyProgress, run_search
from tuner.search.trial import TrialContext
from tuner.tracking.base import NullTracker
from tuner.workload.loader import load_workload

REPO = Path(__file__).resolve().parents[3]
HW = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=1024, numa_nodes=2,
              gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=str(i)) for i in range(8)])
MODEL = ModelInfo(path="/m", architecture=None, attention_heads=32, kv_heads=8,
                  max_model_len=8192, layers=32, hidden_size=4096)


def test_parallel_trials_hold_disjoint_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    spec = load_engine_spec("vllm")
    ctx = TrialContext(spec=spec, space=load_search_space("vllm").for_host(HW, MODEL),
                       workload=load_workload(REPO / "experiments" / "workloads" / "smoke.yaml"),
                       hardware=HW, model=MODEL, model_ref="/m", served_name="m",
                       launcher=None, run_dir=tmp_path, progress=NULL_PROGRESS,  # type: ignore[arg-type]
                       gpu_pool=GpuPool(list(range(8)), tmp_path / "locks"))
    held: dict[int, list[int]] = {}
    guard = threading.Lock()
    clashes: list[list[int]] = []
    peak = [0]

    def fake_run_trial(ctx: TrialContext, number: int, config: dict[str, Any], *,
                       defaults: bool) -> TrialResult:
        result = TrialResult(number=number, config=config, defaults=defaults, outcome="ok",
                             accelerators=spec.accelerators_used(config))
        broken = [] if defaults else ctx.check_rules(config)
        if broken:
            return result.model_copy(update={"outcome": "invalid_config",
                                             "rejected_before_launch": True})
        lease = ctx.devices(result.accelerators)
        assert lease is not None
        with guard:
            mine = set(lease.devices)
            if any(mine & set(d) for d in held.values()):
                clashes.append(lease.devices)
            held[number] = lease.devices
            peak[0] = max(peak[0], len(held))
        time.sleep(0.4)
        with guard:
            del held[number]
        lease.release()
        return result.model_copy(update={"cost_per_m_output_tokens": 1.0 + number,
                                         "max_load": 1.0})

    monkeypatch.setattr(study_module, "run_trial", fake_run_trial)
    cfg = TuneConfig(engine="vllm", workload=REPO / "experiments/workloads/smoke.yaml",
                     model="/m", trials=12, parallel=4, out_dir=tmp_path, study_name="par")
    state = StudyProgress()
    study = run_search(cfg, ctx, NullTracker(), state)
    launched = [r for r in state.results if not r.rejected_before_launch]
    assert len(launched) == 12
    assert clashes == []
    assert peak[0] > 1
    assert state.results[0].defaults or any(r.defaults for r in state.results)
    assert len(study.trials) == len(state.results)
