"""Measure configurations again on fresh engine starts, interleaved, as `tune measure` does.

Each fresh start of a candidate is a whole trial (:mod:`tuner.study.repeats.fresh_start`: start,
readiness, warm-up, capacity search, interpolated capacity and its cost), so a re-measurement
re-tests the capacity the search found instead of trusting it. The candidates take turns within
each repeat so that drift on the machine hits all of them. A candidate's cost interval is a
bootstrap over its starts and the requests of each start's best step, each start's throughput
scaled to its estimated capacity (:mod:`tuner.metrics.bootstrap`); the records of every start
are kept, so intervals can be rebuilt later from the files alone. A study's own re-measurement
runs as units of work in its storage (:mod:`tuner.study.repeats.remeasure_round`), whose results
carry the output tokens the bootstrap needs, so the summary needs no host's files.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from tuner.core import RESOLUTION
from tuner.loadgen import RequestRecord, read_records_csv
from tuner.measurement import CapacityEstimate
from tuner.metrics import (
    Interval,
    PooledSpread,
    RatioVerdict,
    RunTokens,
    cost_samples,
    floored,
    interval,
    measured,
    paired_verdict,
    point_cost,
    pooled_spread,
    ratio_interval,
    step_floor,
    window_ns,
)
from tuner.study.outcome import (
    MeasuredRun,
    Timing,
    TrialResult,
    baseline_trial,
    defaults_trial,
    ranked,
)
from tuner.study.repeats.fresh_start import fresh_start
from tuner.study.run_folder import remeasure_tag
from tuner.study.trial import TrialContext

log = logging.getLogger(__name__)
StudyVerdict = Literal["win", "no_gain", "unresolved"]


@dataclass
class Candidate:
    engine: str
    trial: TrialResult
    ctx: TrialContext


class Remeasured(BaseModel):
    """A candidate's re-measurement, summarised."""

    engine: str
    trial: int
    defaults: bool
    baseline: str | None = Field(default=None, description="the user's current "
                                 "configuration's name, when this is it (tune --baseline)")
    config: dict[str, Any]
    load: float = Field(description="the capacity the search found")
    capacities: list[float] = Field(default_factory=list, description=(
        "the capacity each fresh start found (starts that met the SLOs at some load)"))
    runs: int
    slo_passed_runs: int = Field(description="fresh starts that met the SLOs at some load")
    failures: list[str]
    cost: Interval | None
    ttft_p95_ms: list[float]
    itl_p95_ms: list[float]
    output_tokens_per_s: list[float]
    command: str | None
    unresolved_step: float | None = Field(default=None, description=(
        "the widest capacity step a fresh start could not interpolate within"))


class TrialVerdict(BaseModel):
    """One candidate's verdict against the defaults."""

    trial: int
    verdict: RatioVerdict


class RemeasureOutcome(BaseModel):
    candidates: list[Remeasured]
    winner: Remeasured | None
    defaults: Remeasured | None
    tuning_delta: Interval | None
    runs: list[MeasuredRun]
    timing: Timing
    paired: RatioVerdict | None = None
    """The side-by-side verdict of the best re-measured configuration against the defaults:
    each repeat's starts of the two paired, the level shared over the candidates."""
    paired_trial: int | None = None
    study_verdict: StudyVerdict | None = None
    """win, no_gain (nothing beats the defaults by more than the resolution) or unresolved."""
    start_spread: PooledSpread | None = None
    """The start-to-start spread of capacity, pooled over the candidates' fresh starts."""
    verdicts: list[TrialVerdict] = Field(default_factory=list)
    """Each candidate's verdict against the defaults (what a race decides on)."""
    baseline: Remeasured | None = None
    """The user's current configuration (``tune --baseline``), re-measured beside the
    defaults."""
    against_baseline: RatioVerdict | None = None
    """The study's verdict against the baseline, as ``paired`` is against the defaults: the
    decided win with the highest lower bound, or the best candidate's interval."""
    against_baseline_trial: int | None = None
    baseline_verdict: StudyVerdict | None = None
    """win, no_gain or unresolved, against the baseline."""


def pick_candidates(results: list[TrialResult], top: int) -> list[TrialResult]:
    """The defaults and the user's current configuration (``tune --baseline``), each when it
    met the SLOs, and the ``top`` cheapest other configurations."""
    firsts = [t for t in (defaults_trial(results), baseline_trial(results))
              if t is not None and t.feasible]
    picked = [r for r in ranked(results) if not r.defaults and not r.baseline][:top]
    return firsts + picked


def run_tokens(records: list[RequestRecord], step: int | None = None, scale: float = 1.0
               ) -> RunTokens:
    """The output tokens and window of the measured records (of epoch ``step`` only, when
    given), their throughput scaled by ``scale``."""
    recs = [r for r in measured(records) if step is None or r.step == step]
    return RunTokens(np.array([r.generated for r in recs if r.ok], dtype=np.float64),
                     window_ns(recs) / 1e9, scale)


def measure_interleaved(cands: list[Candidate], *, repeats: int
                        ) -> tuple[list[MeasuredRun], Timing]:
    runs: list[MeasuredRun] = []
    timing = Timing()
    t0 = time.monotonic()
    for rep in range(repeats):
        for cand in cands:
            runs.append(measure_once(cand, rep, timing))
    timing.wall_s = time.monotonic() - t0
    return runs, timing


def measure_once(cand: Candidate, rep: int, timing: Timing) -> MeasuredRun:
    """One fresh start of one candidate, a trial like the search's; a failure is the run's
    ``failure``, never raised."""
    ctx, trial = cand.ctx, cand.trial
    ctx.progress.status("trial", f"re-measuring {cand.engine} trial {trial.number} on a fresh "
                        f"start (repeat {rep + 1})")
    records: list[RequestRecord] = []
    result = fresh_start(ctx, trial.number, trial.config, defaults=trial.defaults,
                         tag=remeasure_tag(trial.number, rep), records_out=records)
    for name in ("startup_s", "warmup_s", "measure_s", "teardown_s"):
        setattr(timing, name, getattr(timing, name) + getattr(result.timing, name))
    run = run_of(cand.engine, result, rep, ctx.workload.cost.usd_per_hour_for(result.accelerators))
    if run.records_path and run.failure is None:
        tokens = run_tokens(records, run.step, run.scale)  # as measured, not read back
        run.output_tokens = [int(t) for t in tokens.tokens]
        run.window_s = tokens.window_s
    return run


def run_of(engine: str, result: TrialResult, rep: int, usd_per_hour: float) -> MeasuredRun:
    """A fresh start's trial result as a re-measurement run."""
    run = MeasuredRun(engine=engine, trial=result.number, defaults=result.defaults, repeat=rep,
                      load=result.max_load or 0.0, usd_per_hour=usd_per_hour,
                      records_path=result.records_path, bound=result.capacity_bound)
    cap = result.capacity
    if result.outcome != "ok":
        run.failure = f"{result.outcome}: {result.detail}"
    elif cap is not None and cap.estimate is not None:
        run.unresolved_step = unresolved_step(cap.estimate)
        if cap.best is not None:
            run.summary = cap.best
            run.step = next(i for i, s in enumerate(cap.steps) if s == cap.best)
            run.scale = cap.estimate.load / cap.best.load
            run.binding = cap.estimate.binding
    return run


def unresolved_step(est: CapacityEstimate) -> float | None:
    """How wide the step is that a capacity is only known to lie in (None: interpolated)."""
    if est.interpolated or est.high is None or est.low <= 0:
        return None
    return (est.high - est.low) / est.low


TokensOf = Callable[[MeasuredRun], RunTokens]
"""What the bootstrap needs of a run that produced records (its best step's output tokens)."""


def tokens_from_records(run: MeasuredRun) -> RunTokens:
    """A run's tokens: those it keeps, else read from its records file (a run an earlier
    tuner version stored without them)."""
    if run.output_tokens is not None and run.window_s is not None:
        return RunTokens(np.array(run.output_tokens, dtype=np.float64), run.window_s, run.scale)
    assert run.records_path is not None
    return run_tokens(read_records_csv(Path(run.records_path)), run.step, run.scale)


def cost_of(runs: list[MeasuredRun], seed: int, tokens_of: TokensOf = tokens_from_records
            ) -> tuple[Interval | None, np.ndarray]:
    """Cost per million output tokens over ``runs`` (one candidate), with its bootstrap."""
    tokens = [tokens_of(r) for r in runs if r.records_path and r.failure is None]
    if not tokens:
        return None, np.full(1, np.nan)
    usd = runs[0].usd_per_hour
    samples = cost_samples(tokens, usd, seed=seed)
    return interval(point_cost(tokens, usd), samples), samples


def met_slos(run: MeasuredRun) -> bool:
    """Whether a fresh start met the SLOs at some load (a run recorded before each start was a
    capacity search: at the one load it ran)."""
    return run.failure is None and (run.summary is None or run.summary.slo.passed)


def summarise_candidate(engine: str, trial: TrialResult, runs: list[MeasuredRun],
                        seed: int, tokens_of: TokensOf = tokens_from_records
                        ) -> tuple[Remeasured, np.ndarray]:
    mine = [r for r in runs if r.engine == engine and r.trial == trial.number]
    cost, samples = cost_of(mine, seed + trial.number, tokens_of)
    done = [r.summary for r in mine if r.summary is not None]
    return Remeasured(
        engine=engine, trial=trial.number, defaults=trial.defaults, baseline=trial.baseline,
        config=trial.config,
        load=trial.max_load or 0.0,
        capacities=[r.load for r in mine if met_slos(r)],
        runs=len([r for r in mine if r.records_path]),
        slo_passed_runs=len([r for r in mine if met_slos(r)]),
        failures=[r.failure for r in mine if r.failure], cost=cost,
        ttft_p95_ms=[s.ttft_ms.p95 or float("nan") for s in done],
        itl_p95_ms=[s.itl_ms.p95 or float("nan") for s in done],
        output_tokens_per_s=[s.output_token_throughput for s in done],
        command=trial.command,
        unresolved_step=max((r.unresolved_step for r in mine if r.unresolved_step is not None),
                            default=None)), samples


def pick_winner(candidates: list[Remeasured]) -> Remeasured | None:
    """The cheapest candidate that met the SLOs on every fresh start; only when none did, the
    cheapest of all (the verdict then says so). A configuration that cannot hold its SLOs at
    any load on some starts is not one to deploy on the strength of the others."""
    scored = [m for m in candidates if m.cost is not None]
    held = [m for m in scored if m.runs and m.slo_passed_runs == m.runs] or scored
    return min(held, key=lambda m: m.cost.value if m.cost else float("inf"), default=None)


def outcome_of(engine: str, picked: list[TrialResult], runs: list[MeasuredRun], seed: int,
               timing: Timing, tokens_of: TokensOf = tokens_from_records,
               resolution: float = RESOLUTION, looks: int = 1, prior: PooledSpread | None = None
               ) -> RemeasureOutcome:
    """One engine's re-measured candidates (``picked``, from their ``runs``), the winner and
    the tuning delta."""
    summarised = [summarise_candidate(engine, t, runs, seed, tokens_of) for t in picked]
    out = [m for m, _ in summarised]
    samples = {m.trial: s for m, s in summarised}
    winner = pick_winner(out)
    defaults = next((m for m in out if m.defaults), None)
    delta = None
    if winner is not None and defaults is not None and defaults.cost and winner.cost:
        delta = ratio_interval(defaults.cost.value, samples[defaults.trial],
                               winner.cost.value, samples[winner.trial])
    verdicts = verdicts_against_defaults(runs, picked, resolution, looks, prior)
    paired, paired_trial, study = study_verdict_of(verdicts)
    base = next((t for t in picked if t.baseline), None)
    against, against_trial, kind = (None, None, None) if base is None else study_verdict_of(
        verdicts_against(runs, picked, base, resolution, looks, prior))
    return RemeasureOutcome(candidates=out, winner=winner, defaults=defaults,
                            tuning_delta=delta, runs=runs, timing=timing, paired=paired,
                            paired_trial=paired_trial, study_verdict=study,
                            start_spread=floored(pooled_spread(start_groups(runs, picked)),
                                                 runs_floor(runs)),
                            verdicts=verdicts,
                            baseline=next((m for m in out if m.baseline), None),
                            against_baseline=against, against_baseline_trial=against_trial,
                            baseline_verdict=kind)


def _pairable(run: MeasuredRun) -> bool:
    return run.failure is None and run.load > 0 and not run.bound


def _advantage(run: MeasuredRun, over: MeasuredRun) -> float:
    """The log of ``run``'s advantage over the start it is paired with: ``over``'s cost over
    its own (capacity ratio times price ratio)."""
    return math.log(over.usd_per_hour * run.load / (run.usd_per_hour * over.load))


def runs_floor(runs: list[MeasuredRun]) -> float:
    """The least start-to-start SD the pairable starts can show (``step_floor``): capacities
    that were not interpolated are known to their step only."""
    return step_floor([r.unresolved_step for r in runs if _pairable(r)])


def start_groups(runs: list[MeasuredRun], picked: list[TrialResult]) -> list[list[float]]:
    """Each candidate's capacities on the fresh starts that can be compared."""
    return [[r.load for r in runs if r.trial == t.number and _pairable(r)] for t in picked]


def verdicts_against_defaults(runs: list[MeasuredRun], picked: list[TrialResult],
                              resolution: float, looks: int = 1,
                              prior: PooledSpread | None = None) -> list[TrialVerdict]:
    """Each candidate against the defaults, paired repeat by repeat (the defaults' cost over
    the candidate's: capacity ratio times price ratio), the pooled start-to-start spread its
    noise, its level shared over the candidates and over ``looks`` (a race decides after each
    of up to ``looks`` repeats); when no candidate has two starts to pool, ``prior``'s (the
    host and engine's as ``tune measure`` recorded it). A candidate with no pair has none."""
    defaults = defaults_trial(picked)
    return [] if defaults is None else verdicts_against(runs, picked, defaults, resolution,
                                                        looks, prior)


def verdicts_against(runs: list[MeasuredRun], picked: list[TrialResult], against: TrialResult,
                     resolution: float, looks: int = 1, prior: PooledSpread | None = None
                     ) -> list[TrialVerdict]:
    """Each other candidate against ``against`` (the defaults, or the user's current
    configuration, against which the defaults are a candidate too), as
    :func:`verdicts_against_defaults` says."""
    base = {r.repeat: r for r in runs if r.trial == against.number and _pairable(r)}
    others = [t for t in picked if t.number != against.number]
    floor = runs_floor(runs)
    pooled = floored(pooled_spread(start_groups(runs, picked)), floor) or prior
    found: list[TrialVerdict] = []
    for t in others:
        logs = [_advantage(r, over=d) for r in runs if r.trial == t.number and _pairable(r)
                and (d := base.get(r.repeat)) is not None]
        if logs:
            found.append(TrialVerdict(trial=t.number, verdict=paired_verdict(
                logs, resolution, pooled=pooled, family=len(others), looks=looks,
                floor_sd=floor)))
    return found


def verdict_between(runs: list[MeasuredRun], a: tuple[str, int], b: tuple[str, int],
                    resolution: float, family: int = 1) -> RatioVerdict | None:
    """A's advantage over B (B's cost over A's), each identified by (engine, trial), paired
    repeat by repeat as :func:`measure_interleaved` ran them (engines side by side: ``tune
    compare``'s engine delta), the start-to-start spread pooled over both; None without a
    pair."""
    def starts(key: tuple[str, int]) -> dict[int, MeasuredRun]:
        return {r.repeat: r for r in runs if (r.engine, r.trial) == key and _pairable(r)}

    mine, theirs = starts(a), starts(b)
    logs = [_advantage(m, over=o) for rep, m in mine.items()
            if (o := theirs.get(rep)) is not None]
    if not logs:
        return None
    floor = runs_floor([*mine.values(), *theirs.values()])
    pooled = floored(pooled_spread([[r.load for r in mine.values()],
                                    [r.load for r in theirs.values()]]), floor)
    return paired_verdict(logs, resolution, pooled=pooled, family=family, floor_sd=floor)


def study_verdict_of(found: list[TrialVerdict]
                     ) -> tuple[RatioVerdict | None, int | None, StudyVerdict | None]:
    """The study's verdict from each candidate's (:func:`verdicts_against_defaults`): a win
    (the decided win with the highest lower bound), nothing to gain (every candidate decided
    equivalent or worse; the best of them shown), or unresolved (the best candidate's
    interval shown)."""
    if not found:
        return None, None, None
    wins = [f for f in found if f.verdict.kind == "better"]
    if wins:
        best = max(wins, key=lambda f: f.verdict.low or 0.0)
        return best.verdict, best.trial, "win"
    best = max(found, key=lambda f: f.verdict.ratio)
    settled = all(f.verdict.kind in ("equivalent", "worse") for f in found)
    return best.verdict, best.trial, "no_gain" if settled else "unresolved"
