"""One trial: check the rules, launch the engine, wait for it, search its capacity, stop it.

One trial is one outcome, always. A configuration that breaks a known rule is never
launched. Start, readiness, probe and measurement failures become the trial's outcome class;
only an interrupt (Ctrl-C, SIGTERM) propagates. The GPU lease and the engine are released on
every path (:meth:`TrialContext.engine`), for trials and re-measurements alike.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import SecretStr

from tuner.core import EndpointError, EngineCrashed, EngineHung, EngineStartError
from tuner.engines import EngineSpec, ModelInfo, broken_rules, rule_names
from tuner.host import Hardware, check_free, cpu_list, no_space, out_of_space
from tuner.launch import EngineHandle, GpuPool, Launcher, LaunchRequest, classify_log, port_taken
from tuner.loadgen import Progress, RequestRecord, write_records_csv
from tuner.metric_registry import Metric
from tuner.metrics import RunSummary, money
from tuner.study.measurer import Measurer
from tuner.study.outcome import FAILED_OUTCOMES, Outcome, Timing, TrialResult
from tuner.study.quality_guard import QualityGuard
from tuner.study.run_folder import RunFolder, trial_tag
from tuner.study.space import SearchSpace
from tuner.workload import SloBounds, Workload

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
    measurer: Measurer
    run_dir: Path
    progress: Progress
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

    def defaults_config(self) -> dict[str, Any]:
        """What the defaults trial runs: each knob's engine default on this device (None: the
        engine decides). The engine itself is started with no knob set."""
        return self.spec.defaults(self.hardware.device)

    @contextmanager
    def engine(self, config: dict[str, Any], tag: str, *, defaults: bool, accelerators: int,
               timing: Timing) -> Iterator[EngineHandle]:
        """Lease GPUs, start the engine; on the way out, however it is left, stop the engine
        and release the lease (the stop's seconds go to ``timing.teardown_s``)."""
        lease = None if self.gpu_pool is None else self.gpu_pool.acquire(accelerators)
        try:
            request = LaunchRequest(
                spec=self.spec, config={} if defaults else config, model=self.model_ref,
                served_name=self.served_name, log_path=self.folder.log(tag),
                labels={**self.labels, "tuner.trial": tag}, secret_env=self.secret_env,
                devices=lease.devices if lease else [],
                cpus=cpu_list(self.hardware.engine_cpus) or None)
            handle = self.launcher.start(request)
            with self._lock:
                self.live.add(handle)
            try:
                yield handle
            finally:
                t_down = time.monotonic()
                self.progress.status("phase", "stopping engine")
                self.stop(handle)
                timing.teardown_s += time.monotonic() - t_down
        finally:
            if lease is not None:
                lease.release()

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

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.run_dir)

    def write_records(self, records: list[RequestRecord], tag: str) -> str:
        path = self.folder.records(tag)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_records_csv(records, path)
        return str(path)


@dataclass(frozen=True)
class Failure:
    """Why a launched engine gave no result: its outcome class, a line, the log's tail."""

    outcome: Outcome
    detail: str
    log_tail: str | None = None


def classify_failure(exc: Exception, handle: EngineHandle | None, spec: EngineSpec) -> Failure:
    """The outcome of a trial (or re-measurement) that raised ``exc``."""
    if isinstance(exc, EngineStartError):
        return Failure(cast(Outcome, exc.outcome), str(exc), exc.log_tail or None)
    if isinstance(exc, EngineCrashed) and handle is not None:
        return crash_failure(handle, spec)
    if isinstance(exc, EngineHung):
        return Failure("hung", f"{exc}; the engine was killed", handle.log_tail() if handle
                       else None)
    if isinstance(exc, EndpointError):
        return Failure("probe_failed", f"the engine started but {exc}",
                       handle.log_tail() if handle else None)
    log.debug("trial failed", exc_info=exc)
    return Failure("error", f"{type(exc).__name__}: {exc}"[:500],
                   handle.log_tail() if handle else None)


def crash_failure(handle: EngineHandle, spec: EngineSpec) -> Failure:
    _, evidence = classify_log(handle.log_text(), spec.failures, handle.exit_code())
    return Failure("crashed_during_load", f"engine exited with code {handle.exit_code()} under "
                   f"load ({evidence})", handle.log_tail())


def run_trial(ctx: TrialContext, number: int, config: dict[str, Any], *, defaults: bool,
              tag: str | None = None, guard: QualityGuard | None = None,
              records_out: list[RequestRecord] | None = None) -> TrialResult:
    """Measure ``config`` (or the engine's defaults) on a fresh engine start; ``tag`` names its
    log and records (default ``trial-NNN``); ``records_out`` receives the per-request
    records as measured (the file is for the user, not to be read back). With ``guard`` (a
    study's search trials), the engine also records the reference answers of the quality
    check or, for a configuration with lossy changes that met the SLOs, is checked against
    them."""
    t0 = time.monotonic()
    recorded = ctx.defaults_config() if defaults else config
    result = TrialResult(number=number, config=recorded, defaults=defaults, outcome="ok",
                         accelerators=ctx.spec.accelerators_used(recorded, ctx.hardware.device))
    broken = [] if defaults else ctx.check_rules(config)
    if broken:
        result.outcome, result.rejected_before_launch = "invalid_config", True
        result.broken_rules, result.detail = broken, f"rejected before launch: {broken[0]}"
        result.timing = Timing(wall_s=time.monotonic() - t0)
        return result
    tag = tag or trial_tag(number)
    check_free(ctx.run_dir)  # a full disk stops the study; it is no configuration's failure
    timing = Timing()
    started: list[EngineHandle] = []
    try:
        for attempt in range(PORT_RETRIES + 1):
            try:
                _launch_and_measure(ctx, config, tag, defaults, result, timing, started,
                                    guard, records_out)
                break
            except EngineStartError:
                if attempt == PORT_RETRIES or not started or not port_taken(
                        started[-1].log_text()):
                    raise
                log.warning("%s: another program took the engine's port before it bound it; "
                            "starting it again on another port", tag)
    except Exception as exc:  # one trial = one outcome; interrupts are BaseException and pass
        if out_of_space(exc):
            raise no_space(ctx.run_dir, str(exc)) from exc
        failed = classify_failure(exc, started[-1] if started else None, ctx.spec)
        result.outcome, result.detail, result.log_tail = (failed.outcome, failed.detail,
                                                          failed.log_tail)
    if result.outcome in FAILED_OUTCOMES:
        check_free(ctx.run_dir)  # an engine that could not write its log is not to blame
    timing.wall_s = time.monotonic() - t0
    result.timing = timing
    return result



PORT_RETRIES = 2
"""Starts again, on another port, of an engine whose port another program took between the
probe and the engine's bind (``launch.isolation.free_port`` makes that rare, not impossible)."""


def _launch_and_measure(ctx: TrialContext, config: dict[str, Any], tag: str, defaults: bool,
                        result: TrialResult, timing: Timing, started: list[EngineHandle],
                        guard: QualityGuard | None,
                        records_out: list[RequestRecord] | None = None) -> None:
    """One engine start of a trial: launch, wait until ready (and record the quality check's
    reference), search its capacity, fill ``result`` and check its quality; the handle goes
    into ``started`` (for the failure's log)."""
    lossy = guard.lossy(config, defaults=defaults) if guard is not None else {}
    with ctx.engine(config, tag, defaults=defaults, accelerators=result.accelerators,
                    timing=timing) as handle:
        started.append(handle)
        result.command, result.launch = handle.rendered.command_line(), handle.describe()
        result.log_path = str(handle.log_path)
        t_ready = time.monotonic()
        try:
            ctx.measurer.wait_ready(handle)
        finally:
            timing.startup_s = time.monotonic() - t_ready
        result.health_lead_s, result.metric_families = (handle.health_lead_s,
                                                        handle.metric_families)
        if guard is not None and not lossy:
            guard.record_reference(ctx.measurer, handle, result.number, defaults=defaults)
        t_measure = time.monotonic()
        try:
            capacity, records = ctx.measurer.capacity(handle, result.accelerators)
        finally:
            timing.measure_s = time.monotonic() - t_measure
        result.records_path = ctx.write_records(records, tag)
        if records_out is not None:
            records_out.extend(records)
        result.capacity, result.best = capacity, capacity.best
        if capacity.warmup is not None:
            timing.warmup_s = capacity.warmup.seconds
            timing.measure_s = max(0.0, timing.measure_s - timing.warmup_s)
        if (guard is not None and lossy and capacity.best is not None
                and capacity.estimate is not None and handle.exit_code() is None):
            _check_quality(ctx, guard, handle, tag, lossy, result, timing)
        if handle.exit_code() is not None:
            failed = crash_failure(handle, ctx.spec)
            result.outcome, result.detail, result.log_tail = (failed.outcome, failed.detail,
                                                              failed.log_tail)
        elif capacity.best is None or capacity.estimate is None:
            result.outcome = "slo_infeasible"
            lowest = min(capacity.steps, key=lambda s: s.load) if capacity.steps else None
            result.detail = ("no load met the SLOs" if lowest is None else
                             f"no load met the SLOs (at load {lowest.load:.3g}: "
                             f"{', '.join(lowest.slo.failed()) or lowest.stopped_early})")
        else:
            result.cost_per_m_output_tokens = capacity.estimate.cost_per_m_output_tokens
            result.max_load = capacity.estimate.load
            result.accelerators = capacity.best.accelerators
            if result.quality is not None and not result.quality.passed:
                result.outcome = "quality_failed"
                result.detail = (f"{result.quality.line()}; it met the SLOs at "
                                 f"{result.max_load:.3g} for "
                                 f"{money(result.cost_per_m_output_tokens)}/M output tokens")


def _check_quality(ctx: TrialContext, guard: QualityGuard, handle: EngineHandle, tag: str,
                   lossy: dict[str, Any], result: TrialResult, timing: Timing) -> None:
    """The lossy configuration's answers against the reference, on its running engine (the
    seconds count as measurement)."""
    verdict = guard.judge(ctx.measurer, handle, tag, lossy)
    timing.measure_s += verdict.seconds
    result.quality = verdict
    ctx.progress.log(f"{tag}: quality check: {verdict.line()}")


def constraint_values(result: TrialResult, slo: SloBounds) -> dict[str, float]:
    """Optuna constraints (feasible when all <= 0): each SLO bound's margin that the registry
    makes a constraint (``ttft``, ``itl``: value / bound - 1, at most 10; ``errors``: error
    rate - bound), and ``launch``: a failure to launch, no load within the SLOs, or a failed
    quality check (by how much its token agreement fell short; 1 when not compared)."""
    bounded = {m.slo.constraint: (m, b) for m, b in slo.bounds().items()
               if m.slo is not None and m.slo.constraint is not None}
    if result.outcome in ("ok", "slo_infeasible", "quality_failed"):
        step: RunSummary | None = result.best
        if step is None and result.capacity and result.capacity.steps:
            step = min(result.capacity.steps, key=lambda s: s.load)
        if step is None:
            return dict.fromkeys(bounded, 1.0) | {"launch": 0.0}
        margins = {name: _margin(m, b, m.value(step)) for name, (m, b) in bounded.items()}
        cut = 1.0 if result.outcome == "slo_infeasible" else 0.0
        if result.outcome == "quality_failed":
            cut = quality_shortfall(result)
        return margins | {"launch": cut if max(margins.values()) <= 0 else 0.0}
    return dict.fromkeys(bounded, 0.0) | {"launch": 10.0}


def _margin(metric: Metric, bound: float, value: float | None) -> float:
    """How far ``value`` is past ``bound`` (a missing value: the worst, or 0 when its absence
    passes)."""
    assert metric.slo is not None
    if value is None:
        value = 0.0 if metric.slo.absent_passes else metric.worst()
    if not metric.slo.relative:
        return value - bound
    return min(value / bound - 1, 10.0)


def quality_shortfall(result: TrialResult) -> float:
    """How far a failed quality check fell short of the least token agreement (above 0)."""
    q = result.quality
    if q is None or q.agreement is None:
        return 1.0
    return max(q.min_token_agreement - q.agreement.token_agreement, 0.01)
