"""Sends are timed on the event loop alone: nothing blocks the loop that stamps tokens."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from tuner.loadgen import precise_timer
from tuner.loadgen import schedule as runner


async def test_sleep_until_never_blocks_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    def blocking(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) on the event loop thread")

    monkeypatch.setattr(time, "sleep", blocking)
    for ahead_ns in (0, 200_000, 900_000, 3_000_000):  # below and above a timer's millisecond
        target = time.perf_counter_ns() + ahead_ns
        await runner.sleep_until(target)
        assert time.perf_counter_ns() >= target


async def test_other_tasks_run_while_a_send_waits() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await runner.sleep_until(time.perf_counter_ns() + 5_000_000)
    task.cancel()
    assert ticks > 1


def test_never_early_on_uvloop_while_the_loop_is_busy() -> None:
    """uvloop's timers count from the time cached when the loop's iteration began: a timer set
    late in a busy iteration fires early unless the wait is repeated."""
    from tuner.loadgen import event_loop

    async def busy_then_wait(ahead_ns: int) -> int:
        spin_until = time.perf_counter_ns() + 1_500_000  # the iteration is 1.5 ms old already
        while time.perf_counter_ns() < spin_until:
            pass
        target = time.perf_counter_ns() + ahead_ns
        await runner.sleep_until(target)
        return time.perf_counter_ns() - target

    async def main() -> list[int]:
        await asyncio.sleep(0.001)
        return [await busy_then_wait(ahead) for ahead in range(100_000, 3_000_000, 150_000)]

    assert min(event_loop.run(main())) >= 0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_timerfd_wait_is_never_early_and_leaves_no_descriptor() -> None:
    from tuner.loadgen import event_loop

    assert precise_timer.available()

    async def waits() -> list[int]:
        late = []
        for ahead_ns in (0, 50_000, 300_000, 900_000, 2_500_000):
            target = time.perf_counter_ns() + ahead_ns
            await precise_timer.wait_until(target)
            late.append(time.perf_counter_ns() - target)
        return late

    before = open_fds()
    for run in (asyncio.run, event_loop.run):  # asyncio's loop and uvloop's
        assert min(run(waits())) >= 0
    assert open_fds() == before


async def test_a_cancelled_wait_closes_its_timer() -> None:
    before = open_fds()
    waiter = asyncio.create_task(precise_timer.wait_until(time.perf_counter_ns() + 10 * 10**9))
    await asyncio.sleep(0.01)
    assert open_fds() == before + 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert open_fds() == before


async def test_a_long_wait_wakes_once_before_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that slept for seconds wakes late; woken PREWAKE_NS early, the last wait is a
    short one. A wait up to PREWAKE_AFTER_NS wakes once (an early wake costs CPU)."""
    deadlines: list[int] = []
    wait = precise_timer.wait_until

    async def noted(deadline_ns: int) -> None:
        deadlines.append(deadline_ns)
        await wait(deadline_ns)

    monkeypatch.setattr(runner, "wait_until", noted)
    target = time.perf_counter_ns() + runner.PREWAKE_AFTER_NS + 30_000_000
    await runner.sleep_until(target)
    assert time.perf_counter_ns() >= target
    assert deadlines == [target - runner.PREWAKE_NS, target]
    deadlines.clear()
    short = time.perf_counter_ns() + runner.PREWAKE_AFTER_NS // 2
    await runner.sleep_until(short)
    assert deadlines == [short]
