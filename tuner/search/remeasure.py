"""Measure the defaults and the best few configurations again, on fresh engine starts.

Each candidate runs at the load its capacity search found, on the same seeded
requests (one epoch per repeat, shared by all candidates), interleaved across
candidates so that drift on the machine hits every one of them. Costs get
bootstrap intervals over restarts and requests; the tuning delta is the
defaults' cost over the winner's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import numpy as np
from pydantic import BaseModel

from tuner.errors import EngineStartError
from tuner.loadgen.records import write_records_csv
from tuner.metrics.figures import measured, window_ns
from tuner.metrics.summary import RunSummary
from tuner.search.outcome import Timing, TrialResult
from tuner.search.trial import TrialContext
from tuner.stats import Interval, RunTokens, cost_samples, interval, point_cost, ratio_interval

log = logging.getLogger(__name__)

EPOCH_BASE = 1000


class Remeasured(BaseModel):
    trial: int
    defaults: bool
    config: dict[str, Any]
    load: float
    runs: int
    slo_passed_runs: int
    failures: list[str]
    cost: Interval | None
    ttft_p95_ms: list[float]
    itl_p95_ms: list[float]
    output_tokens_per_s: list[float]
    command: str | None


class RemeasureOutcome(BaseModel):
    candidates: list[Remeasured]
    winner: Remeasured | None
    defaults: Remeasured | None
    tuning_delta: Interval | None
    timing: Timing


def pick_candidates(results: list[TrialResult], top: int) -> list[TrialResult]:
    feasible = sorted((r for r in results if r.feasible),
                      key=lambda r: r.cost_per_m_output_tokens or float("inf"))
    picked = [r for r in feasible if not r.defaults][:top]
    defaults = next((r for r in results if r.defaults and r.feasible), None)
    return ([defaults] if defaults else []) + picked


def run_tokens(summary_records: list[Any]) -> RunTokens:
    recs = [r for r in measured(summary_records) if r.ok]
    return RunTokens(np.array([r.generated for r in recs], dtype=np.float64),
                     window_ns(measured(summary_records)) / 1e9)


def remeasure(ctx: TrialContext, results: list[TrialResult], *, top: int, repeats: int,
              duration_s: float | None, seed: int) -> RemeasureOutcome:
    cands = pick_candidates(results, top)
    runs: dict[int, list[RunTokens]] = {c.number: [] for c in cands}
    summaries: dict[int, list[RunSummary]] = {c.number: [] for c in cands}
    failures: dict[int, list[str]] = {c.number: [] for c in cands}
    timing = Timing()
    t0 = time.monotonic()
    for rep in range(repeats):
        for cand in cands:
            assert cand.max_load is not None
            ctx.progress.status("trial", f"re-measuring trial {cand.number} on a fresh start "
                                f"({rep + 1}/{repeats})")
            tag = f"remeasure-{cand.number:03d}-{rep}"
            lease = ctx.devices(cand.accelerators)
            handle = ctx.start(cand.config, tag, defaults=cand.defaults,
                               devices=lease.devices if lease else [])
            try:
                timing.startup_s += ctx.ready(handle)
                t_m = time.monotonic()
                ctx.progress.status("phase", f"measuring at load {cand.max_load:.3g}")
                summary, records = asyncio.run(_once(ctx, handle, cand, rep, duration_s))
                timing.measure_s += time.monotonic() - t_m
                path = ctx.run_dir / "records" / f"{tag}.csv"
                path.parent.mkdir(parents=True, exist_ok=True)
                write_records_csv(records, path)
                summaries[cand.number].append(summary)
                runs[cand.number].append(run_tokens(records))
            except EngineStartError as exc:
                failures[cand.number].append(f"{exc.outcome}: {exc}")
            finally:
                t_d = time.monotonic()
                ctx.stop(handle)
                if lease is not None:
                    lease.release()
                timing.teardown_s += time.monotonic() - t_d
    timing.wall_s = time.monotonic() - t0
    price = ctx.workload.cost.usd_per_hour
    out: list[Remeasured] = []
    samples: dict[int, np.ndarray] = {}
    for cand in cands:
        usd = price * (cand.accelerators if ctx.workload.cost.per_accelerator else 1)
        got = runs[cand.number]
        cost = None
        if got:
            samples[cand.number] = cost_samples(got, usd, seed=seed + cand.number)
            cost = interval(point_cost(got, usd), samples[cand.number])
        ss = summaries[cand.number]
        out.append(Remeasured(
            trial=cand.number, defaults=cand.defaults, config=cand.config,
            load=cand.max_load or 0.0, runs=len(ss), slo_passed_runs=sum(s.slo.passed for s in ss),
            failures=failures[cand.number], cost=cost,
            ttft_p95_ms=[s.ttft_ms.p95 or float("nan") for s in ss],
            itl_p95_ms=[s.itl_ms.p95 or float("nan") for s in ss],
            output_tokens_per_s=[s.output_token_throughput for s in ss], command=cand.command))
    scored = [m for m in out if m.cost is not None]
    winner = min(scored, key=lambda m: m.cost.value if m.cost else float("inf"), default=None)
    defaults = next((m for m in out if m.defaults), None)
    delta = None
    if winner is not None and defaults is not None and defaults.cost and winner.cost:
        delta = ratio_interval(defaults.cost.value, samples[defaults.trial],
                               winner.cost.value, samples[winner.trial])
    return RemeasureOutcome(candidates=out, winner=winner, defaults=defaults,
                            tuning_delta=delta, timing=timing)


async def _once(ctx: TrialContext, handle: Any, cand: TrialResult, rep: int,
                duration_s: float | None) -> tuple[RunSummary, list[Any]]:
    bench = await ctx.bench(handle, cand.accelerators)
    summary = await bench.once(cand.max_load, epoch=EPOCH_BASE + rep,
                               duration_s=duration_s or ctx.workload.capacity.step_duration_s)
    return summary, bench.records
