"""The capacity search at its seam: a step whose requests meet the TTFT bound below a true
capacity and miss it far above, searched to a resolution, and its result as the rest of the
package reads it (capacity_of)."""

from __future__ import annotations

import pytest

from tests.unit.fakes.summaries import fake_summary
from tests.unit.metrics.test_figures import done
from tuner.measurement import Probe, SearchBudget, search_capacity
from tuner.measurement.capacity import CapacityEstimate, capacity_of, interpolated
from tuner.metric_registry import ERROR_RATE, TTFT_P95
from tuner.metrics import CapacityInterval, RunSummary, StepSample
from tuner.study.repeats import unresolved_step

BOUNDS = {TTFT_P95: 100.0, ERROR_RATE: 0.01}


class Engine:
    """TTFT 20 ms at or below ``capacity``, 400 ms above; every step kept as a summary."""

    def __init__(self, capacity: float) -> None:
        self.capacity = capacity
        self.calls: list[float] = []
        self.steps: list[RunSummary] = []

    def sample(self, load: float) -> StepSample:
        ttft = 20 if load <= self.capacity else 400
        return StepSample(load, [done(i, i * 10, ttft, [10]) for i in range(40)])

    async def step(self, load: float, index: int) -> Probe:
        assert index == len(self.calls)
        self.calls.append(load)
        self.steps.append(fake_summary(load, load <= self.capacity))
        return Probe(self.sample(load))


@pytest.mark.parametrize(("start", "capacity"), [(1.0, 5.3), (16.0, 5.3), (1.0, 0.7)])
async def test_brackets_then_narrows_to_the_resolution(start: float, capacity: float) -> None:
    engine = Engine(capacity)
    found = await search_capacity(engine.step, start, BOUNDS, SearchBudget(max_steps=30,
                                                                           replicates=50))
    ci = found.interval
    assert found.stopped_by == "resolved"
    assert ci.low is not None
    assert ci.high is not None
    assert ci.low <= capacity < ci.high
    assert (ci.half_width() or 1) <= 0.05
    result = capacity_of(engine.steps, found)
    assert result.best is not None
    assert result.best.load == ci.low
    assert result.lowest_failing_load == ci.high
    assert result.estimate is not None
    assert result.estimate.interval == ci


async def test_integer_loads_narrow_to_neighbours() -> None:
    engine = Engine(6)
    found = await search_capacity(engine.step, 1, BOUNDS, SearchBudget(max_steps=30,
                                                                       replicates=50),
                                  integer=True)
    assert (found.interval.low, found.interval.high) == (6, 7)
    assert all(float(c).is_integer() for c in engine.calls)


async def test_bounded_in_steps_and_time() -> None:
    engine = Engine(1000)
    found = await search_capacity(engine.step, 1, BOUNDS, SearchBudget(max_steps=3,
                                                                       replicates=50))
    assert engine.calls == [1, 2, 4]
    assert found.stopped_by == "max_steps"
    assert found.interval.text() == "≥ 4 (not bracketed)"
    ticks = iter(range(100))
    engine = Engine(5)
    found = await search_capacity(engine.step, 1, BOUNDS, SearchBudget(max_time_s=2.5),
                                  clock=lambda: float(next(ticks)))
    assert found.stopped_by == "max_time"
    assert len(engine.calls) == 2


async def test_no_passing_load_reports_none() -> None:
    engine = Engine(0.0)
    found = await search_capacity(engine.step, 1, BOUNDS, SearchBudget(min_load=0.1,
                                                                       replicates=50))
    assert found.stopped_by == "min_load"
    result = capacity_of(engine.steps, found)
    assert result.best is None
    assert result.estimate is None


async def test_a_step_failed_by_a_saturated_client_is_not_the_engines_failure() -> None:
    """The engine holds up to 40, the client saturates from 20: 20 is measured again, saturates
    again, and the search stops there, the capacity at least 10 and 20 never the engine's
    failing load."""
    engine = Engine(40)

    async def step(load: float, index: int) -> Probe:
        probe = await engine.step(load, index)
        return Probe(probe.sample, client_saturated=load >= 20)

    found = await search_capacity(step, 5, BOUNDS, SearchBudget(replicates=50))
    assert found.stopped_by == "client_saturated"
    assert found.client_limit == 20
    assert engine.calls == [5, 10, 20, 20]
    assert found.interval.text() == "≥ 10 (not bracketed)"


async def test_a_saturated_step_measured_again_without_saturation_counts() -> None:
    engine = Engine(15)

    async def step(load: float, index: int) -> Probe:
        probe = await engine.step(load, index)
        return Probe(probe.sample, client_saturated=index == 2)

    found = await search_capacity(step, 5, BOUNDS, SearchBudget(max_steps=20, replicates=50))
    assert engine.calls[:4] == [5, 10, 20, 20]
    assert found.stopped_by == "resolved"
    assert found.interval.low is not None
    assert found.interval.high is not None
    assert found.interval.low <= 15 < found.interval.high


async def test_a_step_that_measured_nothing_stops_the_search_unjudged() -> None:
    engine = Engine(2)

    async def step(load: float, index: int) -> Probe:
        probe = await engine.step(load, index)
        return Probe(probe.sample, unmeasured=load > 2)

    found = await search_capacity(step, 1, BOUNDS, SearchBudget(replicates=50))
    assert engine.calls == [1, 2, 4]  # 4 was not measured: neither a pass nor a fail
    assert found.stopped_by == "not_measured"
    assert found.interval.text() == "≥ 2 (not bracketed)"


def test_a_point_in_the_middle_of_its_bracket_is_known_only_to_its_step() -> None:
    middle = CapacityInterval(load=11.384, low=10.970, high=11.814, binding="stopped early",
                              steps=8, interpolated=False)
    assert not interpolated(middle, 10.970)
    est = CapacityEstimate(load=11.384, low=10.970, high=11.814, binding="stopped early",
                           interpolated=interpolated(middle, 10.970), output_tokens_per_s=1.0,
                           cost_per_m_output_tokens=1.0, interval=middle)
    assert unresolved_step(est) == pytest.approx(0.0769, abs=1e-3)
    # a search that did not record it: off the step counts as interpolated, as before
    old = middle.model_copy(update={"interpolated": None})
    assert interpolated(old, 10.970)
