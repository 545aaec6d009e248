"""Waiting for a request's planned send time."""

from __future__ import annotations

import asyncio
import time

from tuner.loadgen.precise_timer import wait_until
from tuner.workload import NS


async def sleep_until(target_ns: int) -> None:
    """Sleep until ``target_ns`` on the perf_counter clock, never early, on the loop.

    The loop's timers may fire up to a millisecond or more before their time (uvloop rounds
    to the millisecond and counts from the time it cached at the start of the loop's
    iteration), so the sleep is repeated until the time has come: a send may be late, and its
    record says by how much (``sent_ns`` is stamped when the request goes, ``scheduled_ns`` is
    the plan, and the run's dispatch lag is reported), but never early. Nothing here blocks
    the loop: a blocking sleep would delay every token timestamp of every stream, and a busy
    spin, on a machine the engine also loads, costs the client the scheduler's favour
    (measured in experiments/benchmarks/harness_fidelity.py). Where Linux has a timerfd the
    wait is on it (tuner/loadgen/precise_timer.py), to the nanosecond rather than the loop
    timers' millisecond; the loop's timers then only guard against an early return."""
    await wait_until(target_ns)
    # a deadline, not a condition another task sets: nothing to wait on but the clock
    while (delay := (target_ns - time.perf_counter_ns()) / NS) > 0:  # noqa: ASYNC110
        await asyncio.sleep(delay)
