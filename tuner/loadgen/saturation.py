"""Is the load generator itself the bottleneck? Its CPU, its event loop's lag, its send slips.

A saturated client measures itself, not the engine: its sends go late and every token it
timestamps waits behind the others. A run says so (``RunSummary.client_saturated``) and the
capacity search does not take a failed step that was saturated as the engine's failure.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import Sequence

CPU_SHARE = 0.9
"""Of the cores the generator may use: past this it has no room left."""
LAG_MS = 5.0
"""p99 lateness of the event loop's timers, or of the sends, past which results are suspect."""
LATE_SENDS = 3
"""Sends more than LAG_MS late that it takes, beside a p99 past it, to call the client late: in
a run of fewer than a hundred sends the p99 is the latest one, and one send delayed once (the
client's process descheduled for an engine on a shared CPU host) is not a saturated client. A
run of 58 sends at 0.3 req/s beside vLLM on 2 cores had one send 7.3 ms late, with the client
at 0.02 cores and its loop 1.0 ms late at p99, and was called saturated."""


class LoopLag:
    """Samples how late the event loop wakes up a timer, every ``period_s``, while running."""

    def __init__(self, period_s: float = 0.02) -> None:
        self.period_s = period_s
        self.lags_ms = array("d")  # 50 a second: 8 bytes each, not a Python float each

    async def watch(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.period_s)
            self.lags_ms.append(max(0.0, (time.perf_counter() - t - self.period_s) * 1000))

    def p99(self) -> float | None:
        return p99(self.lags_ms)


def p99(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def saturation(cpu_cores: float | None, cores: int, loop_lag_p99_ms: float | None,
               send_lags_ms: Sequence[float] | None) -> str | None:
    """Why the generator was saturated in a run, or None: it used nearly all its cores, or its
    loop ran more than LAG_MS late at p99, or its sends did (``send_lags_ms``: how late each
    was; at least LATE_SENDS of them past LAG_MS)."""
    reasons = []
    if cpu_cores is not None and cpu_cores >= CPU_SHARE * cores:
        reasons.append(f"used {cpu_cores:.2f} of its {cores} core{'s' * (cores != 1)}")
    if loop_lag_p99_ms is not None and loop_lag_p99_ms > LAG_MS:
        reasons.append(f"event loop {loop_lag_p99_ms:.1f} ms late at p99")
    send_p99 = p99(send_lags_ms) if send_lags_ms else None
    late = sum(lag > LAG_MS for lag in send_lags_ms) if send_lags_ms else 0
    if send_p99 is not None and send_p99 > LAG_MS and late >= LATE_SENDS:
        reasons.append(f"sends {send_p99:.1f} ms late at p99")
    return "load generator saturated: " + ", ".join(reasons) if reasons else None
