"""Waiting for a request's planned send time."""

from __future__ import annotations

import asyncio
import time

from tuner.workload.arrivals import NS


async def sleep_until(target_ns: int) -> None:
    """Sleep until ``target_ns`` on the perf_counter clock, on the event loop only.

    The loop's timers may wake up to a millisecond off (uvloop's round to the millisecond);
    a send is then that late, or early, and its record says so (``sent_ns`` is stamped when
    the request goes, ``scheduled_ns`` is the plan, and the run's dispatch lag is reported).
    Nothing here blocks the loop: a blocking sleep would delay every token timestamp of every
    stream, and a busy spin, on a machine the engine also loads, costs the client the
    scheduler's favour (measured in experiments/benchmarks/harness_fidelity.py)."""
    delay = (target_ns - time.perf_counter_ns()) / NS
    if delay > 0:
        await asyncio.sleep(delay)
