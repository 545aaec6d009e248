"""When the load generator itself is the bottleneck, from recorded figures."""

import asyncio
import time

from tuner.loadgen.saturation import LoopLag, p99, saturation


def test_a_client_with_room_is_not_saturated() -> None:
    assert saturation(0.4, 1, 0.8, [0.3] * 100) is None
    assert saturation(None, 1, None, None) is None


def test_each_sign_of_saturation_is_named() -> None:
    why = saturation(0.95, 1, 12.0, [0.2] * 90 + [30.5] * 10)
    assert why is not None
    assert "used 0.95 of its 1 core" in why
    assert "event loop 12.0 ms late" in why
    assert "sends 30.5 ms late" in why
    assert saturation(1.5, 2, None, None) is None  # 1.5 of 2 cores leaves room


def test_one_send_late_once_is_not_a_saturated_client() -> None:
    """58 sends at 0.3 req/s beside vLLM on 2 cores (experiments/headroom/demo-vllm,
    lowload-f6m167-s62): one 7.3 ms late, the client at 0.02 cores, its loop 1.0 ms late. The
    p99 of 58 sends is the latest one; it takes three late sends to call the client late."""
    sends = [0.4] * 57 + [7.3]
    assert saturation(0.02, 2, 1.0, sends) is None
    assert saturation(0.02, 2, 1.0, [0.4] * 56 + [7.3] * 2) is None
    late = saturation(0.02, 2, 1.0, [0.4] * 55 + [7.3] * 3)
    assert late == "load generator saturated: sends 7.3 ms late at p99"
    # many sends: three late ones in a thousand are under 1%, and the p99 is on time
    assert saturation(0.02, 2, 1.0, [0.4] * 997 + [9.0] * 3) is None
    assert saturation(0.02, 2, 1.0, [0.4] * 980 + [9.0] * 20) is not None


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
