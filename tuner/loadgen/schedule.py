"""Waiting for a request's planned send time."""

from __future__ import annotations

import asyncio
import time

from tuner.loadgen.precise_timer import wait_until
from tuner.workload import NS

PREWAKE_NS = 20_000_000
"""How long before a send the client wakes once first, when the send is due later than that.

A process that slept for seconds wakes late: on a 2-core KVM guest (Intel Xeon family 6 model
167, haltpoll idle driver) a timerfd 3.3 s ahead fired 2.6-3.8 ms late at the median and up to
16 ms, 1 s ahead 1.2 ms (p90 3.2), 0.1 s ahead 0.4 ms, 20 ms ahead 0.3 ms
(experiments/benchmarks/idle_wake.py). So at low load, where the client waits seconds
between sends with nothing in flight, sends went 3-12 ms late (8 of 58 past 5 ms at 0.3
req/s). Woken 20 ms early, the last wait is a short one: 0.27 ms at the median, 0.62 at most."""


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
    timers' millisecond; the loop's timers then only guard against an early return. A wait
    longer than PREWAKE_NS wakes once PREWAKE_NS before its time, so the last wake is a
    short sleep's, not a long one's."""
    if target_ns - time.perf_counter_ns() > PREWAKE_NS:
        await wait_until(target_ns - PREWAKE_NS)
    await wait_until(target_ns)
    # a deadline, not a condition another task sets: nothing to wait on but the clock
    while (delay := (target_ns - time.perf_counter_ns()) / NS) > 0:  # noqa: ASYNC110
        await asyncio.sleep(delay)
