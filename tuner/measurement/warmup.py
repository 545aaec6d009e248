"""Warm a freshly started engine until its latencies stop moving.

An engine's first requests are not its steady state: vLLM compiles new batch shapes, caches
are allocated, pages are faulted in. Rounds of the workload's own mix are sent at the first
load of the capacity search (fresh prompts, never measured) until two rounds in a row have
median TTFT and median TPOT within ``tolerance`` of each other, or ``max_s`` has passed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel

from tuner.metrics import RunSummary
from tuner.workload import EngineWarmup

WARMUP_EPOCH = 500  # prompts of their own: warm-up never warms a measured step's prefixes


class WarmupRound(BaseModel):
    load: float
    requests: int
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None


class WarmupResult(BaseModel):
    rounds: list[WarmupRound]
    seconds: float
    stable: bool


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


async def warm_up(run_round: Callable[[int], Awaitable[RunSummary]], cfg: EngineWarmup,
                  clock: Callable[[], float] = time.monotonic) -> WarmupResult:
    """Call ``run_round(i)`` until :func:`settled` or ``cfg.max_s`` has passed."""
    start = clock()
    rounds: list[WarmupRound] = []
    while True:
        s = await run_round(len(rounds))
        rounds.append(WarmupRound(load=s.load, requests=s.requests, ttft_p50_ms=s.ttft_ms.p50,
                                  tpot_p50_ms=s.tpot_ms.p50))
        if settled(rounds, cfg.tolerance, cfg.min_rounds):
            return WarmupResult(rounds=rounds, seconds=clock() - start, stable=True)
        if clock() - start >= cfg.max_s:
            return WarmupResult(rounds=rounds, seconds=clock() - start, stable=False)
