"""Warm a freshly started engine until its latencies stop moving.

An engine's first requests are not its steady state: vLLM compiles new batch shapes, caches
are allocated, pages are faulted in. First a ramp: short rounds at twice, four times, ... the
first load of the capacity search. A round that fails the SLOs is repeated at its load while it
gets faster, and the doubling goes on once one passes; the ramp ends at a load that fails and
no longer improves. So the engine has met its large batches, and left its slow phase, before a
step is measured (the first 15-25 s at a high load after a start were several times slower
than the rest of it, and a ramp that stopped at its first failing round stopped inside that
phase at 16-32 req/s: experiments/verdicts/results/slow_phase.txt). It goes no higher than
the capacity search can reach in its steps: no step is measured above that. Then rounds of the
workload's own mix at the first load (fresh prompts, never measured) until two rounds in a
row have median TTFT and median TPOT within ``tolerance`` of each other, or ``max_s`` has
passed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel

from tuner.metrics import RunSummary
from tuner.workload import EngineWarmup

WARMUP_EPOCH = 500  # prompts of their own: warm-up never warms a measured step's prefixes
RAMP_DOUBLINGS = 6
"""The ramp goes up to 64 times the first load, no further, whatever passes."""
RAMP_EPOCHS = 100
"""The ramp's prompts: epochs WARMUP_EPOCH + RAMP_EPOCHS + i, apart from the rounds'."""


class WarmupRound(BaseModel):
    load: float
    requests: int
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None


class WarmupResult(BaseModel):
    rounds: list[WarmupRound]
    seconds: float
    stable: bool
    ramp: list[WarmupRound] = []
    """The ramp's rounds, before ``rounds`` (none in records made before it)."""


def settled(rounds: Sequence[WarmupRound], tolerance: float, min_rounds: int = 2) -> bool:
    """The last round's median TTFT and TPOT are within ``tolerance`` (relative) of the round
    before, and at least ``min_rounds`` were run."""
    if len(rounds) < max(2, min_rounds):
        return False
    last, before = rounds[-1], rounds[-2]
    for now, then in ((last.ttft_p50_ms, before.ttft_p50_ms),
                      (last.tpot_p50_ms, before.tpot_p50_ms)):
        if now is None or then is None:
            if now is not then:  # one round has the figure and the other not: not settled
                return False
            continue
        if abs(now - then) > tolerance * max(abs(then), 1e-9):
            return False
    return True


def round_of(s: RunSummary) -> WarmupRound:
    return WarmupRound(load=s.load, requests=s.requests, ttft_p50_ms=s.ttft_ms.p50,
                       tpot_p50_ms=s.tpot_ms.p50)


def faster(now: WarmupRound, then: WarmupRound, tolerance: float) -> bool:
    """``now``'s median TTFT or median TPOT is below ``then``'s by more than ``tolerance``."""
    return any(a is not None and b is not None and a < (1 - tolerance) * b
               for a, b in ((now.ttft_p50_ms, then.ttft_p50_ms),
                            (now.tpot_p50_ms, then.tpot_p50_ms)))


async def ramp(run_round: Callable[[float, int], Awaitable[RunSummary]], first: float,
               cfg: EngineWarmup, integer: bool = False,
               ceiling: float | None = None) -> list[WarmupRound]:
    """``run_round(load, i)`` at twice ``first``, then twice that, ...; a round that fails the
    SLOs is run again at its load while it is :func:`faster` than the one before (the engine
    is still leaving its slow phase), and the ramp ends at a failing round that is not, at a
    passing round at :data:`RAMP_DOUBLINGS` doublings or at ``ceiling`` (the highest load the
    capacity search can reach: no step is measured above it, so warming there is time lost),
    or after ``cfg.ramp_rounds`` (none when ``cfg.ramp_s`` is 0)."""
    rounds: list[WarmupRound] = []
    load = first
    hold = False
    doublings = 0
    for i in range(cfg.ramp_rounds if cfg.ramp_s > 0 else 0):
        if not hold:
            if doublings == RAMP_DOUBLINGS or (ceiling is not None and load >= ceiling):
                break
            load = float(max(load + 1, round(2 * load))) if integer else 2 * load
            if ceiling is not None:
                load = min(load, ceiling)
            doublings += 1
        s = await run_round(load, i)
        this = round_of(s)
        settled_failing = hold and not s.slo.passed and not faster(this, rounds[-1],
                                                                   cfg.tolerance)
        rounds.append(this)
        if settled_failing:
            break
        hold = not s.slo.passed
    return rounds


async def warm_up(run_round: Callable[[int], Awaitable[RunSummary]], cfg: EngineWarmup,
                  clock: Callable[[], float] = time.monotonic) -> WarmupResult:
    """Call ``run_round(i)`` until :func:`settled` or ``cfg.max_s`` has passed."""
    start = clock()
    rounds: list[WarmupRound] = []
    while True:
        s = await run_round(len(rounds))
        rounds.append(round_of(s))
        if settled(rounds, cfg.tolerance, cfg.min_rounds):
            return WarmupResult(rounds=rounds, seconds=clock() - start, stable=True)
        if clock() - start >= cfg.max_s:
            return WarmupResult(rounds=rounds, seconds=clock() - start, stable=False)
