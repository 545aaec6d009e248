"""Capacity from every step: the monotone fit, the crossing, its interval, bounds as bounds."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.unit.fakes.queueing_engine import QueueingEngine
from tests.unit.metrics.test_figures import done
from tuner.measurement import Probe, SearchBudget, search_capacity
from tuner.metric_registry import ERROR_RATE, ITL_P95, TTFT_P95
from tuner.metrics import StepSample, capacity_interval

BOUNDS = {TTFT_P95: 100.0, ITL_P95: 50.0, ERROR_RATE: 0.01}


def step(load: float, ttft_ms: int, n: int = 60) -> StepSample:
    """``n`` requests whose TTFT is ``ttft_ms`` (ITL 10 ms)."""
    return StepSample(load, [done(i, i * 10, ttft_ms, [10, 10]) for i in range(n)])


def test_steps_that_all_pass_give_a_lower_bound_not_a_figure() -> None:
    found = capacity_interval([step(4, 20), step(8, 30), step(16, 40)], BOUNDS)
    assert (found.load, found.low, found.high) == (None, 16, None)
    assert found.text("req/s") == "≥ 16 req/s (not bracketed)"
    assert found.half_width() is None


def test_steps_that_all_fail_give_an_upper_bound() -> None:
    found = capacity_interval([step(4, 200), step(8, 300)], BOUNDS)
    assert (found.load, found.low, found.high) == (None, None, 4)
    assert found.text("req/s") == "< 4 req/s (no load met the SLOs)"


def test_a_clear_pass_and_fail_bracket_the_capacity_and_interpolate() -> None:
    found = capacity_interval([step(4, 20), step(8, 50), step(16, 400)], BOUNDS)
    assert (found.low, found.high) == (8, 16)
    assert found.load is not None
    assert 8 < found.load < 16
    assert found.binding == "ttft_p95_ms"
    assert found.text() == f"{found.load:.3g} (8-16)"
    assert found.interpolated is True


def test_a_censored_step_puts_the_capacity_below_it() -> None:
    cut = StepSample(10, [done(i, i * 10, 900, [10]) for i in range(12)], censored=True)
    found = capacity_interval([step(4, 20), step(8, 30), cut], BOUNDS)
    assert (found.low, found.high) == (8, 10)
    assert found.binding == "stopped early"
    # the point is the bracket's middle, not read off a curve: the step is all that is known
    # (two fresh starts that land on these steps agree exactly, to 16 digits)
    assert found.load == pytest.approx((8 * 10) ** 0.5)
    assert found.interpolated is False


def test_two_steps_at_one_load_that_disagree_both_count() -> None:
    # 60 requests at 90 ms pass; 60 at 150 ms fail; together the p95 is past the bound.
    found = capacity_interval([step(4, 20), step(8, 90), step(8, 150)], BOUNDS)
    assert (found.low, found.high) == (4, 8)


def test_a_noisy_inversion_is_pooled_not_believed() -> None:
    # 16 req/s happened to pass after 8 failed: the monotone fit pools them.
    found = capacity_interval([step(4, 20), step(8, 130), step(16, 95), step(32, 500)],
                              BOUNDS)
    assert found.high is not None
    assert found.high <= 16


def test_the_search_resolves_a_simulated_engine_around_its_true_capacity() -> None:
    rng = np.random.default_rng(3)
    start = QueueingEngine().start(rng)

    async def probe(load: float, index: int) -> Probe:
        return Probe(start.step(load, rng, index=index))

    bounds = {TTFT_P95: 500.0, ERROR_RATE: 0.01}
    found = asyncio.run(search_capacity(probe, 4.0, bounds, SearchBudget(max_steps=12)))
    ci = found.interval
    assert found.loads[:3] == [4.0, 8.0, 16.0]  # up while nothing fails
    assert ci.low is not None
    assert ci.high is not None
    assert ci.low <= start.capacity(500.0) <= ci.high
    assert found.stopped_by in ("resolved", "max_steps")


def test_the_search_goes_on_up_until_something_fails_or_the_load_ends() -> None:
    async def easy(load: float, index: int) -> Probe:
        return Probe(step(load, 10))

    found = asyncio.run(search_capacity(easy, 2.0, BOUNDS, SearchBudget(max_load=20.0)))
    assert found.loads == [2.0, 4.0, 8.0, 16.0, 20.0]
    assert found.stopped_by == "max_load"
    assert found.interval.text() == "≥ 20 (not bracketed)"


def test_a_saturated_client_ends_the_search_with_what_it_had() -> None:
    async def client_bound(load: float, index: int) -> Probe:
        return Probe(step(load, 10), client_saturated=load >= 8)

    found = asyncio.run(search_capacity(client_bound, 2.0, BOUNDS, SearchBudget()))
    assert found.stopped_by == "client_saturated"
    assert found.client_limit == 8
    assert found.interval.text() == "≥ 4 (not bracketed)"


@pytest.mark.parametrize("seed", [0, 1])
def test_the_interval_is_the_same_for_the_same_seed(seed: int) -> None:
    steps = [step(4, 20), step(8, 95), step(16, 400)]
    assert capacity_interval(steps, BOUNDS, seed=seed) == capacity_interval(steps, BOUNDS,
                                                                             seed=seed)
