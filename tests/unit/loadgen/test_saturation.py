"""When the load generator itself is the bottleneck, from recorded figures."""

import asyncio
import time

from tuner.loadgen.saturation import LoopLag, p99, saturation


def test_a_client_with_room_is_not_saturated() -> None:
    assert saturation(0.4, 1, 0.8, 0.3) is None
    assert saturation(None, 1, None, None) is None


def test_each_sign_of_saturation_is_named() -> None:
    why = saturation(0.95, 1, 12.0, 30.5)
    assert why is not None
    assert "used 0.95 of its 1 core" in why
    assert "event loop 12.0 ms late" in why
    assert "sends 30.5 ms late" in why
    assert saturation(1.5, 2, None, None) is None  # 1.5 of 2 cores leaves room


def test_recorded_loop_lags_a_busy_loop_shows() -> None:
    # Lags recorded in a run where one callback held the loop for 40 ms every half second.
    lags = [0.1] * 95 + [40.0] * 5
    assert p99(lags) == 40.0
    assert saturation(0.5, 1, p99(lags), None) is not None


async def test_the_monitor_sees_a_blocked_loop() -> None:
    lag = LoopLag(period_s=0.005)
    watcher = asyncio.create_task(lag.watch())
    await asyncio.sleep(0.02)
    time.sleep(0.05)  # noqa: ASYNC251  # blocking the loop is the point
    await asyncio.sleep(0.02)
    watcher.cancel()
    assert max(lag.lags_ms) >= 30


def test_the_garbage_collector_waits_for_the_run_to_end() -> None:
    import gc
    import weakref

    from tuner.loadgen.runner import gc_paused

    assert gc.isenabled()
    before = gc.get_freeze_count()
    with gc_paused():
        assert not gc.isenabled()
        # what was alive before the run is left out of the collection at its end
        assert gc.get_freeze_count() > before
        made = Cycle()  # a cycle the run leaves behind is collected at its end
        made.me = made
        gone = weakref.ref(made)
        del made
        assert gone() is not None
    assert gone() is None
    assert gc.isenabled()
    assert gc.get_freeze_count() == before


class Cycle:
    me: object = None
