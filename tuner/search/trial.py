"""One trial: check the rules, launch the engine, wait for it, search its capacity, stop it.

A configuration that breaks a known rule is never launched. Every launched
engine is stopped, whatever happens. Failures become outcomes, not exceptions;
only an interrupt (Ctrl-C, SIGTERM) propagates, after teardown.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tuner.bench import Bench, open_bench
from tuner.engines.model_info import ModelInfo
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import EngineSpec
from tuner.errors import EngineCrashed, EngineStartError
from tuner.hardware import Hardware
from tuner.launch.base import EngineHandle, Launcher, LaunchRequest
from tuner.launch.classify import classify_log
from tuner.launch.gpus import GpuLease, GpuPool
from tuner.launch.readiness import wait_ready
from tuner.loadgen.records import write_records_csv
from tuner.metrics.summary import RunSummary
from tuner.progress import Progress
from tuner.search.capacity import CapacityResult
from tuner.search.outcome import Timing, TrialResult
from tuner.search.space import SearchSpace
from tuner.workload.models import Workload

log = logging.getLogger(__name__)


@dataclass
class TrialContext:
    """What every trial of a study shares."""

    spec: EngineSpec
    space: SearchSpace
    workload: Workload
    hardware: Hardware
    model: ModelInfo
    model_ref: str
    served_name: str
    launcher: Launcher
    run_dir: Path
    progress: Progress
    startup_timeout_s: float | None = None
    secret_env: dict[str, SecretStr] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    gpu_pool: GpuPool | None = None
    live: set[EngineHandle] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check_rules(self, config: dict[str, Any]) -> list[str]:
        names = rule_names(self.spec, config, self.hardware, self.model,
                           self.workload.max_request_tokens())
        return [f"{r.name}: {r.message}" for r in
                broken_rules(self.spec.rules + self.space.constraints, names)]

    def devices(self, count: int) -> GpuLease | None:
        """A lease on ``count`` GPUs of this host (None on CPU); waits for free ones."""
        return None if self.gpu_pool is None else self.gpu_pool.acquire(count)

    def start(self, config: dict[str, Any], tag: str, *, defaults: bool,
              devices: list[int] | None = None) -> EngineHandle:
        request = LaunchRequest(
            spec=self.spec, config={} if defaults else config, model=self.model_ref,
            served_name=self.served_name, log_path=self.run_dir / "logs" / f"{tag}.log",
            labels={**self.labels, "tuner.trial": tag}, secret_env=self.secret_env,
            devices=devices or [], cache_dir=None)
        handle = self.launcher.start(request)
        with self._lock:
            self.live.add(handle)
        return handle

    def stop(self, handle: EngineHandle) -> None:
        handle.stop()
        with self._lock:
            self.live.discard(handle)

    def stop_all(self) -> None:
        """Stop every engine still running (an interrupt of a parallel study)."""
        with self._lock:
            handles = list(self.live)
        for handle in handles:
            self.stop(handle)

    def ready(self, handle: EngineHandle) -> float:
        self.progress.status("phase", "starting engine")
        return wait_ready(handle, self.spec, self.served_name, timeout_s=self.startup_timeout_s,
                          on_wait=lambda s: self.progress.status(
                              "phase", f"starting engine ({s:.0f}s)"))

    async def bench(self, handle: EngineHandle, accelerators: int) -> Bench:
        return await open_bench(self.workload, handle.base_url, tokenizer=self.workload.tokenizer
                                or Path(self.model.path), metrics_url=handle.metrics_url,
                                accelerators=accelerators,
                                force_lengths=self.spec.forces_output_length,
                                progress=self.progress)


def _crash_outcome(handle: EngineHandle, spec: EngineSpec) -> tuple[str, str]:
    _, evidence = classify_log(handle.log_text(), spec.failures, handle.exit_code())
    return "crashed_during_load", f"engine exited with code {handle.exit_code()} under load " \
        f"({evidence})"


def run_trial(ctx: TrialContext, number: int, config: dict[str, Any], *, defaults: bool
              ) -> TrialResult:
    t0 = time.monotonic()
    result = TrialResult(number=number, config=config, defaults=defaults, outcome="ok",
                         accelerators=ctx.spec.accelerators_used(config))
    broken = [] if defaults else ctx.check_rules(config)
    if broken:
        result.outcome, result.rejected_before_launch = "invalid_config", True
        result.broken_rules, result.detail = broken, f"rejected before launch: {broken[0]}"
        result.timing = Timing(wall_s=time.monotonic() - t0)
        return result
    tag = f"trial-{number:03d}"
    lease = ctx.devices(result.accelerators)
    try:
        return _launched_trial(ctx, result, tag, defaults, lease.devices if lease else [], t0)
    finally:
        if lease is not None:
            lease.release()


def _launched_trial(ctx: TrialContext, result: TrialResult, tag: str, defaults: bool,
                    devices: list[int], t0: float) -> TrialResult:
    config = result.config
    handle = ctx.start(config, tag, defaults=defaults, devices=devices)
    result.command, result.launch = handle.rendered.command_line(), handle.describe()
    result.log_path = str(handle.log_path)
    timing = Timing()
    try:
        try:
            timing.startup_s = ctx.ready(handle)
        except EngineStartError as exc:
            result.outcome, result.detail = exc.outcome, str(exc)  # type: ignore[assignment]  # the launcher's classes are Outcome values
            result.log_tail = exc.log_tail
            timing.startup_s = time.monotonic() - t0
            return result
        t_measure = time.monotonic()
        try:
            capacity, bench = asyncio.run(_measure(ctx, handle, result.accelerators))
        except EngineCrashed:
            result.outcome, result.detail = _crash_outcome(handle, ctx.spec)  # type: ignore[assignment]  # a literal Outcome
            result.log_tail = handle.log_tail()
            return result
        finally:
            timing.measure_s = time.monotonic() - t_measure
        records_path = ctx.run_dir / "records" / f"{tag}.csv"
        records_path.parent.mkdir(parents=True, exist_ok=True)
        write_records_csv(bench.records, records_path)
        result.records_path = str(records_path)
        result.capacity, result.best = capacity, capacity.best
        if handle.exit_code() is not None:
            result.outcome, result.detail = _crash_outcome(handle, ctx.spec)  # type: ignore[assignment]  # a literal Outcome
            result.log_tail = handle.log_tail()
        elif capacity.best is None:
            result.outcome = "slo_infeasible"
            lowest = min(capacity.steps, key=lambda s: s.load) if capacity.steps else None
            result.detail = ("no load met the SLOs" if lowest is None else
                             f"no load met the SLOs (at load {lowest.load:.3g}: "
                             f"{', '.join(lowest.slo.failed()) or lowest.stopped_early})")
        else:
            result.cost_per_m_output_tokens = capacity.best.cost_per_m_output_tokens
            result.max_load = capacity.best.load
            result.accelerators = capacity.best.accelerators
        return result
    finally:
        t_down = time.monotonic()
        ctx.progress.status("phase", "stopping engine")
        ctx.stop(handle)
        timing.teardown_s = time.monotonic() - t_down
        timing.wall_s = time.monotonic() - t0
        result.timing = timing


async def _measure(ctx: TrialContext, handle: EngineHandle, accelerators: int
                   ) -> tuple[CapacityResult, Bench]:
    bench = await ctx.bench(handle, accelerators)

    def alive() -> None:
        if handle.exit_code() is not None:
            raise EngineCrashed(f"engine exited with code {handle.exit_code()}")

    return await bench.capacity(before_step=alive), bench


def constraint_values(result: TrialResult, slo_ttft: float, slo_itl: float,
                      max_err: float) -> dict[str, float]:
    """Optuna constraints (feasible when all <= 0): relative SLO margins, launch failure."""
    if result.outcome in ("ok", "slo_infeasible"):
        step: RunSummary | None = result.best
        if step is None and result.capacity and result.capacity.steps:
            step = min(result.capacity.steps, key=lambda s: s.load)
        if step is None:
            return {"ttft": 1.0, "itl": 1.0, "errors": 1.0, "launch": 0.0}
        ttft = (step.ttft_ms.p95 or float("inf")) / slo_ttft - 1
        itl = (step.itl_ms.p95 or 0.0) / slo_itl - 1
        errors = step.error_rate - max_err
        cut = 1.0 if result.outcome == "slo_infeasible" else 0.0
        return {"ttft": min(ttft, 10.0), "itl": min(itl, 10.0), "errors": errors,
                "launch": cut if max(ttft, itl, errors) <= 0 else 0.0}
    return {"ttft": 0.0, "itl": 0.0, "errors": 0.0, "launch": 10.0}
