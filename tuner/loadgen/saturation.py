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
               send_lag_p99_ms: float | None) -> str | None:
    """Why the generator was saturated in a run, or None: it used nearly all its cores, or its
    loop or its sends ran more than LAG_MS late at p99."""
    reasons = []
    if cpu_cores is not None and cpu_cores >= CPU_SHARE * cores:
        reasons.append(f"used {cpu_cores:.2f} of its {cores} core{'s' * (cores != 1)}")
    if loop_lag_p99_ms is not None and loop_lag_p99_ms > LAG_MS:
        reasons.append(f"event loop {loop_lag_p99_ms:.1f} ms late at p99")
    if send_lag_p99_ms is not None and send_lag_p99_ms > LAG_MS:
        reasons.append(f"sends {send_lag_p99_ms:.1f} ms late at p99")
    return "load generator saturated: " + ", ".join(reasons) if reasons else None
