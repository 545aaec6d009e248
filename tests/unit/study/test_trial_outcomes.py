"""Every outcome path of a trial and of a re-measurement, through the real ``run_trial`` and
re-measurement units on a fake launcher and measurer: one trial is one outcome, the engine is
stopped and the GPU lease released on every path, and only an interrupt propagates."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.fakes.launcher import Behaviour, FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import MakeContext, remeasure_here
from tuner.host import Gpu, Hardware
from tuner.study.repeats.remeasure import pick_candidates
from tuner.study.trial import run_trial

GPU_HOST = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=512, numa_nodes=2,
                    gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=str(i))
                          for i in range(2)])
CONFIG = {"max_batch_size": 64, "chunked_prefill": True}


@pytest.mark.parametrize(("behaviour", "outcome", "launched"), [
    ("refuse_start", "invalid_config", False),
    ("exit_before_ready", "invalid_config", True),
    ("oom_at_start", "oom", True),
    ("crash_under_load", "crashed_during_load", True),
    ("probe_fails", "probe_failed", True),
    ("measure_raises", "error", True),
    ("slo_infeasible", "slo_infeasible", True),
    ("serve", "ok", True),
])
def test_every_failure_is_the_trials_outcome(make_ctx: MakeContext, behaviour: Behaviour,
                                             outcome: str, launched: bool) -> None:
    launcher = FakeLauncher(behaviour)
    ctx = make_ctx(launcher, hardware=GPU_HOST)
    result = run_trial(ctx, 3, CONFIG, defaults=False)
    assert result.outcome == outcome
    assert result.detail or outcome == "ok"
    assert len(launcher.started) == int(launched)
    assert all(h.stops == 1 for h in launcher.started)
    assert launcher.running == set()
    assert ctx.live == set()
    assert ctx.gpu_pool is not None
    lease = ctx.gpu_pool.try_acquire(2)  # the trial's GPU went back to the pool
    assert lease is not None
    lease.release()
    if outcome == "ok":
        assert result.cost_per_m_output_tokens is not None
        assert result.records_path is not None
    if behaviour in ("exit_before_ready", "crash_under_load"):
        assert result.log_tail


def test_an_interrupt_propagates_after_teardown(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()

    class Interrupted(FakeMeasurer):
        def wait_ready(self, handle: object) -> float:
            raise KeyboardInterrupt

    ctx = make_ctx(launcher, Interrupted(), hardware=GPU_HOST)
    with pytest.raises(KeyboardInterrupt):
        run_trial(ctx, 1, CONFIG, defaults=False)
    assert [h.stops for h in launcher.started] == [1]
    assert ctx.gpu_pool is not None
    lease = ctx.gpu_pool.try_acquire(2)
    assert lease is not None
    lease.release()


def test_a_rule_breaker_is_never_launched(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    ctx = make_ctx(launcher)
    result = run_trial(ctx, 2, {"max_batch_size": 8, "max_batched_tokens": 1,
                                "chunked_prefill": False}, defaults=False)
    assert result.rejected_before_launch
    assert launcher.started == []


def test_the_defaults_trial_records_what_ran(make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    ctx = make_ctx(launcher, engine="llamacpp")
    result = run_trial(ctx, 0, {"threads": 3}, defaults=True)
    assert launcher.started[0].request.config == {}  # the engine ran with nothing set
    assert result.config == ctx.spec.defaults("cpu")
    assert result.config["threads"] is None  # the engine decides; not the 3 Optuna was told


@pytest.mark.parametrize("behaviour", ["refuse_start", "exit_before_ready", "oom_at_start",
                                       "crash_under_load", "probe_fails", "measure_raises"])
def test_a_failed_remeasurement_is_recorded_and_the_rest_goes_on(
        make_ctx: MakeContext, behaviour: Behaviour, tmp_path: Path) -> None:
    launcher = FakeLauncher(by_tag={"remeasure-001-0": behaviour})
    ctx = make_ctx(launcher, hardware=GPU_HOST)
    results = [run_trial(ctx, n, {**CONFIG, "max_batch_size": 16 * (n + 1)}, defaults=n == 0)
               for n in range(3)]
    assert all(r.outcome == "ok" for r in results)
    out = remeasure_here(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=2, repeats=1)
    failed = [r for r in out.runs if r.failure]
    assert [(r.trial, r.repeat) for r in failed] == [(1, 0)]
    assert len(out.runs) == 3
    assert all(h.stops == 1 for h in launcher.started)
    assert launcher.running == set()
    assert ctx.gpu_pool is not None
    lease = ctx.gpu_pool.try_acquire(2)
    assert lease is not None
    lease.release()


def test_each_fresh_start_of_a_remeasurement_searches_its_capacity(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    launcher = FakeLauncher()
    ctx = make_ctx(launcher, hardware=GPU_HOST)
    results = [run_trial(ctx, n, {**CONFIG, "max_batch_size": 16 * (n + 1)}, defaults=n == 0)
               for n in range(3)]
    best = pick_candidates(results, 1)[-1]
    launcher.by_tag[f"remeasure-{best.number:03d}-1"] = "slo_infeasible"
    assert isinstance(ctx.measurer, FakeMeasurer)
    searches = ctx.measurer.capacity_calls
    out = remeasure_here(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=1, repeats=2)
    assert ctx.measurer.capacity_calls - searches == 4  # two candidates, two starts each
    mine = next(c for c in out.candidates if c.trial == best.number)
    assert (mine.runs, mine.slo_passed_runs, mine.capacities) == (2, 1, [2.0])
    assert mine.failures[0].startswith("slo_infeasible")
    assert out.winner is not None
    assert out.winner.defaults  # met the SLOs on every start
    assert out.defaults is not None
    assert out.defaults.capacities == [2.0, 2.0]
    started = [h for h in launcher.started if h.request.log_path.stem.startswith("remeasure")]
    assert len(started) == 4
    assert all(h.stops == 1 for h in started)
