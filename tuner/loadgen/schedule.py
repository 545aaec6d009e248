"""Waiting for a request's planned send time."""

from __future__ import annotations

import asyncio
import time

from tuner.loadgen.precise_timer import wait_until
from tuner.workload import NS

PREWAKE_NS = 20_000_000
"""How long before a send the client wakes once first, when the send is due later than
PREWAKE_AFTER_NS.

A process that slept for seconds wakes late, by the machine's own wake-up latency: on a 2-core
KVM guest (Intel Xeon family 6 model 167, haltpoll idle driver) waits of 3.3 s returned p99
8.8 ms late (1 s: 3.3 ms; 0.1 s: 1.2 ms; experiments/benchmarks/idle_wake-f6m167.txt). At low
load the client waits seconds between sends with nothing in flight: at 0.3 req/s 12 of 58
sends went 5.8-12.2 ms late, and the run was called saturated with the client at 0.03 cores.
Woken 20 ms early, the last wait is a short one's: p99 0.6 ms at every gap, and 0 of 58 sends
past 5 ms when that step ran again (experiments/headroom/demo/README.md)."""
PREWAKE_AFTER_NS = 100_000_000
"""Waits up to this long are not woken early: the early wake costs CPU (156 us a send on that
guest, 50 ms apart: ``idle_wake.py --cpu``, 2.8-3.7% of the client's CPU per token at 20 req/s
of 128 tokens), and a wait this short wakes on time (0.1 s apart: p99 1.2 ms)."""


async def sleep_until(target_ns: int, *, prewake_ns: int = PREWAKE_NS) -> None:
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
    longer than PREWAKE_AFTER_NS wakes once ``prewake_ns`` before its time, so the last wake
    is a short sleep's, not a long one's."""
    if target_ns - time.perf_counter_ns() > PREWAKE_AFTER_NS:
        await wait_until(target_ns - prewake_ns)
    await wait_until(target_ns)
    # a deadline, not a condition another task sets: nothing to wait on but the clock
    while (delay := (target_ns - time.perf_counter_ns()) / NS) > 0:  # noqa: ASYNC110
        await asyncio.sleep(delay)
