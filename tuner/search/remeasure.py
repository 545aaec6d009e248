"""Measure configurations again on fresh engine starts, interleaved, on paired requests.

Each candidate runs at the load its capacity search found, on the same seeded requests (one
epoch per repeat, shared by every candidate), and the candidates take turns within each
repeat so that drift on the machine hits all of them. Costs get bootstrap intervals over
restarts and requests (:mod:`tuner.metrics.bootstrap`); the records of every run are kept, so
intervals can be rebuilt later from the files alone.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from tuner.launch.base import EngineHandle
from tuner.loadgen.records import RequestRecord, read_records_csv
from tuner.metrics.bootstrap import (
    Interval,
    RunTokens,
    cost_samples,
    interval,
    point_cost,
    ratio_interval,
)
from tuner.metrics.figures import measured, window_ns
from tuner.metrics.run_summary import RunSummary
from tuner.search.outcome import Timing, TrialResult, defaults_trial, ranked
from tuner.search.trial import TrialContext, classify_failure, crash_failure

log = logging.getLogger(__name__)

EPOCH_BASE = 1000


@dataclass
class Candidate:
    engine: str
    trial: TrialResult
    ctx: TrialContext


class MeasuredRun(BaseModel):
    """One fresh start of one candidate."""

    engine: str
    trial: int
    defaults: bool
    repeat: int
    load: float
    usd_per_hour: float
    records_path: str | None = None
    summary: RunSummary | None = None
    failure: str | None = None


class Remeasured(BaseModel):
    """A candidate's re-measurement, summarised."""

    engine: str
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
    runs: list[MeasuredRun]
    timing: Timing


def pick_candidates(results: list[TrialResult], top: int) -> list[TrialResult]:
    """The defaults (when they met the SLOs) and the ``top`` cheapest other configurations."""
    defaults = defaults_trial(results)
    picked = [r for r in ranked(results) if not r.defaults][:top]
    return ([defaults] if defaults and defaults.feasible else []) + picked


def run_tokens(records: list[RequestRecord]) -> RunTokens:
    recs = measured(records)
    return RunTokens(np.array([r.generated for r in recs if r.ok], dtype=np.float64),
                     window_ns(recs) / 1e9)


def measure_interleaved(cands: list[Candidate], *, repeats: int, duration_s: float | None
                        ) -> tuple[list[MeasuredRun], Timing]:
    runs: list[MeasuredRun] = []
    timing = Timing()
    t0 = time.monotonic()
    for rep in range(repeats):
        for cand in cands:
            runs.append(_measure_once(cand, rep, duration_s, timing))
    timing.wall_s = time.monotonic() - t0
    return runs, timing


def _measure_once(cand: Candidate, rep: int, duration_s: float | None, timing: Timing
                  ) -> MeasuredRun:
    """One fresh start of one candidate; a failure is the run's ``failure``, never raised."""
    ctx, trial = cand.ctx, cand.trial
    assert trial.max_load is not None
    run = MeasuredRun(engine=cand.engine, trial=trial.number, defaults=trial.defaults,
                      repeat=rep, load=trial.max_load,
                      usd_per_hour=ctx.workload.cost.usd_per_hour_for(trial.accelerators))
    ctx.progress.status("trial", f"re-measuring {cand.engine} trial {trial.number} on a fresh "
                        f"start (repeat {rep + 1})")
    tag = f"remeasure-{trial.number:03d}-{rep}"
    handle: EngineHandle | None = None
    try:
        with ctx.engine(trial.config, tag, defaults=trial.defaults,
                        accelerators=trial.accelerators, timing=timing) as handle:
            t_ready = time.monotonic()
            try:
                ctx.measurer.wait_ready(handle)
            finally:
                timing.startup_s += time.monotonic() - t_ready
            t_measure = time.monotonic()
            try:
                summary, records = ctx.measurer.run_at(
                    handle, trial.accelerators, trial.max_load, epoch=EPOCH_BASE + rep,
                    duration_s=duration_s)
            finally:
                timing.measure_s += time.monotonic() - t_measure
            run.summary, run.records_path = summary, ctx.write_records(records, tag)
            if handle.exit_code() is not None:
                failed = crash_failure(handle, ctx.spec)
                run.failure = f"{failed.outcome}: {failed.detail}"
    except Exception as exc:  # a failed run is recorded; interrupts are BaseException and pass
        failed = classify_failure(exc, handle, ctx.spec)
        run.failure = f"{failed.outcome}: {failed.detail}"
    return run


def cost_of(runs: list[MeasuredRun], seed: int) -> tuple[Interval | None, np.ndarray]:
    """Cost per million output tokens over ``runs`` (one candidate), with its bootstrap."""
    tokens = [run_tokens(read_records_csv(Path(r.records_path))) for r in runs
              if r.records_path]
    if not tokens:
        return None, np.full(1, np.nan)
    usd = runs[0].usd_per_hour
    samples = cost_samples(tokens, usd, seed=seed)
    return interval(point_cost(tokens, usd), samples), samples


def summarise_candidate(engine: str, trial: TrialResult, runs: list[MeasuredRun],
                        seed: int) -> tuple[Remeasured, np.ndarray]:
    mine = [r for r in runs if r.engine == engine and r.trial == trial.number]
    cost, samples = cost_of(mine, seed + trial.number)
    done = [r.summary for r in mine if r.summary is not None]
    return Remeasured(
        engine=engine, trial=trial.number, defaults=trial.defaults, config=trial.config,
        load=trial.max_load or 0.0, runs=len(done), slo_passed_runs=sum(s.slo.passed
                                                                        for s in done),
        failures=[r.failure for r in mine if r.failure], cost=cost,
        ttft_p95_ms=[s.ttft_ms.p95 or float("nan") for s in done],
        itl_p95_ms=[s.itl_ms.p95 or float("nan") for s in done],
        output_tokens_per_s=[s.output_token_throughput for s in done],
        command=trial.command), samples


def pick_winner(candidates: list[Remeasured]) -> Remeasured | None:
    """The cheapest candidate whose SLOs held on every fresh start; only when none did, the
    cheapest of all (the verdict then says the capacity did not reproduce). A cost at a load a
    configuration cannot hold is not a cost it can be run at."""
    scored = [m for m in candidates if m.cost is not None]
    held = [m for m in scored if m.runs and m.slo_passed_runs == m.runs] or scored
    return min(held, key=lambda m: m.cost.value if m.cost else float("inf"), default=None)


def remeasure(ctx: TrialContext, results: list[TrialResult], *, top: int, repeats: int,
              duration_s: float | None, seed: int) -> RemeasureOutcome:
    """One engine: the defaults and the best ``top`` configurations, and the tuning delta."""
    engine = ctx.spec.name
    picked = pick_candidates(results, top)
    runs, timing = measure_interleaved([Candidate(engine, t, ctx) for t in picked],
                                       repeats=repeats, duration_s=duration_s)
    summarised = [summarise_candidate(engine, t, runs, seed) for t in picked]
    out = [m for m, _ in summarised]
    samples = {m.trial: s for m, s in summarised}
    winner = pick_winner(out)
    defaults = next((m for m in out if m.defaults), None)
    delta = None
    if winner is not None and defaults is not None and defaults.cost and winner.cost:
        delta = ratio_interval(defaults.cost.value, samples[defaults.trial],
                               winner.cost.value, samples[winner.trial])
    return RemeasureOutcome(candidates=out, winner=winner, defaults=defaults,
                            tuning_delta=delta, runs=runs, timing=timing)
