"""The capacity search at its seam: a fake step whose SLO holds below a true capacity."""

import pytest

from tests.unit.fakes.summaries import fake_summary
from tuner.measurement.capacity import find_capacity
from tuner.metrics import RunSummary
from tuner.workload import CapacitySearch


def stepper(capacity: float):  # type: ignore[no-untyped-def]
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        assert epoch == len(calls)
        calls.append(load)
        return fake_summary(load, load <= capacity)

    return step, calls


@pytest.mark.parametrize(("start", "capacity"), [(1.0, 5.3), (16.0, 5.3), (1.0, 0.7)])
async def test_brackets_then_bisects_to_tolerance(start: float, capacity: float) -> None:
    step, calls = stepper(capacity)
    cfg = CapacitySearch(tolerance=0.05, max_steps=30)
    result = await find_capacity(step, start, cfg)
    assert result.best is not None
    assert result.lowest_failing_load is not None
    assert result.best.load <= capacity < result.lowest_failing_load
    assert (result.lowest_failing_load - result.best.load) / result.best.load <= 0.05
    assert result.stopped_by == "converged"
    assert len(result.steps) == len(calls)


async def test_integer_loads_bisect_to_neighbours() -> None:
    step, calls = stepper(6)
    result = await find_capacity(step, 1, CapacitySearch(max_steps=30), integer=True)
    assert result.max_load == 6
    assert result.lowest_failing_load == 7
    assert all(float(c).is_integer() for c in calls)


async def test_bounded_in_steps_and_time() -> None:
    step, calls = stepper(1000)
    result = await find_capacity(step, 1, CapacitySearch(max_steps=3, max_load=10_000))
    assert len(calls) == 3
    assert result.stopped_by == "max_steps"
    ticks = iter(range(100))
    step, calls = stepper(5)
    result = await find_capacity(step, 1, CapacitySearch(max_time_s=2.5),
                                 clock=lambda: float(next(ticks)))
    assert result.stopped_by == "max_time"
    assert len(calls) == 2


async def test_no_passing_load_reports_none() -> None:
    step, _ = stepper(0.0)
    result = await find_capacity(step, 1, CapacitySearch(min_load=0.1, max_steps=20))
    assert result.best is None
    assert result.stopped_by == "min_load"


async def test_a_load_that_fails_once_is_measured_again() -> None:
    """A transient stall fails the first step at 8; measured again, 8 passes, so the bracket
    stays above it."""
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        calls.append(load)
        transient = load == 8 and calls.count(8) == 1
        return fake_summary(load, load <= 10 and not transient)

    result = await find_capacity(step, 4, CapacitySearch(tolerance=0.3, max_steps=30))
    assert result.best is not None
    assert result.best.load >= 8
    assert calls[:3] == [4, 8, 8]
    assert calls.count(16) == 2  # a real failure is confirmed too


async def test_confirmation_can_be_turned_off() -> None:
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        calls.append(load)
        return fake_summary(load, load <= 10)

    await find_capacity(step, 4, CapacitySearch(tolerance=0.3, max_steps=30,
                                                confirm_failures=False))
    assert calls.count(16) == 1


async def test_a_step_failed_by_a_saturated_client_is_not_the_engines_failure() -> None:
    """The engine holds up to 40, the client saturates from 20: 20 is measured again, saturates
    again, and the search stops there with the capacity at least 10, never recording 20 as the
    engine's failing load."""
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        calls.append(load)
        s = fake_summary(load, load <= 10)
        if load >= 20:
            s = s.model_copy(update={"client_saturated": "load generator saturated: used "
                                     "0.98 of its 1 core"})
        return s

    result = await find_capacity(step, 5, CapacitySearch(max_steps=10))
    assert result.stopped_by == "client_saturated"
    assert result.max_load == 10
    assert result.lowest_failing_load is None
    assert calls == [5, 10, 20, 20]


async def test_a_saturated_failure_measured_again_without_saturation_counts() -> None:
    """One stall of the client at 20: the step is measured again, unsaturated, and counts."""
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        calls.append(load)
        s = fake_summary(load, load <= 15)
        if len(calls) == 3:
            s = s.model_copy(update={"client_saturated": "load generator saturated: sends "
                                     "172.3 ms late at p99"})
        return s

    result = await find_capacity(step, 5, CapacitySearch(max_steps=12, tolerance=0.1,
                                                         confirm_failures=False))
    assert result.stopped_by == "converged"
    assert calls[:4] == [5, 10, 20, 20]
    assert result.lowest_failing_load is not None
    assert result.max_load is not None
    assert result.max_load <= 15 < result.lowest_failing_load


async def test_a_step_that_measured_nothing_stops_the_search_unjudged() -> None:
    calls: list[float] = []

    async def step(load: float, epoch: int) -> RunSummary:
        calls.append(load)
        s = fake_summary(load, load <= 2)
        return s.model_copy(update={"not_measured": "no request was sent"}) if load > 2 else s

    result = await find_capacity(step, 1, CapacitySearch(max_steps=10))
    assert calls == [1, 2, 4]  # 4 was not measured: neither a pass nor a fail
    assert result.stopped_by == "not_measured"
    assert result.lowest_failing_load is None
    assert result.max_load == 2
