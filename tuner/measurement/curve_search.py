"""Capacity search to a resolution: steps placed where they narrow the capacity's interval.

Every step adds its requests to one estimate (:mod:`tuner.metrics.capacity_curve`): the SLO
figures fitted monotone in load, crossed with their bounds, with a bootstrap interval. The
search brackets first (double the load while nothing has failed, halve it while nothing has
passed), then measures at the estimated crossing, where a step narrows the interval most,
until the interval's relative half-width is within ``resolution`` or the step or time budget
ends. It never stops at a bound shown as a figure: while nothing fails, it goes on up, until
something fails, the load reaches ``max_load``, the budget ends or the client saturates; the
interval then says "not bracketed". A step the saturated client failed is measured once more;
saturated again, the search ends there (the client, not the engine, is the limit). A step
with no measured request ends it too, unjudged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import BaseModel

from tuner.core import RESOLUTION
from tuner.metric_registry import Metric
from tuner.metrics import CapacityInterval, StepSample, capacity_interval


@dataclass(frozen=True)
class Probe:
    """One step's requests, and what the client saw of itself."""

    sample: StepSample
    client_saturated: bool = False
    """The load generator, not the engine, was the limit: the step says nothing of the engine."""
    unmeasured: bool = False
    """No measured request (see the step's note): neither a pass nor a fail."""


CurveStep = Callable[[float, int], Awaitable[Probe]]


class CurveSearch(BaseModel):
    """Where the search measured, why it stopped, and the capacity it found."""

    loads: list[float]
    interval: CapacityInterval
    stopped_by: str
    client_limit: float | None = None
    """The load at which the client saturated (the interval is a bound the client set)."""


@dataclass(frozen=True)
class SearchBudget:
    resolution: float = RESOLUTION
    max_steps: int = 12
    max_time_s: float = 600.0
    min_load: float = 0.05
    max_load: float = 1000.0
    replicates: int = 400


def highest_reach(start: float, budget: SearchBudget) -> float:
    """The highest load a search from ``start`` can measure: it doubles its load while nothing
    fails, so no step goes above ``start`` doubled at every step but the first (the warm-up's
    ramp stops there)."""
    return min(budget.max_load, start * 2.0 ** (budget.max_steps - 1))


async def search_capacity(step: CurveStep, start: float, bounds: dict[Metric, float],
                          budget: SearchBudget, *, integer: bool = False, seed: int = 0,
                          clock: Callable[[], float] = time.monotonic) -> CurveSearch:
    """Measure with ``step(load, index)`` from ``start`` until the capacity is resolved."""
    samples: list[StepSample] = []
    loads: list[float] = []
    t_end = clock() + budget.max_time_s

    def snap(x: float) -> float:
        x = min(max(x, budget.min_load), budget.max_load)
        return float(max(1, round(x))) if integer else x

    def estimate() -> CapacityInterval:
        return capacity_interval(samples, bounds, replicates=budget.replicates, seed=seed)

    load = snap(start)
    found = estimate()
    while True:
        if len(loads) >= budget.max_steps:
            stopped_by = "max_steps"
            break
        if clock() >= t_end:
            stopped_by = "max_time"
            break
        probe = await step(load, len(loads))
        loads.append(load)
        if probe.client_saturated and len(loads) < budget.max_steps and clock() < t_end:
            # Once more: one stall of the client is not the end of the search.
            probe = await step(load, len(loads))
            loads.append(load)
        if probe.client_saturated:
            found = estimate()
            return CurveSearch(loads=loads, interval=found, stopped_by="client_saturated",
                               client_limit=load)
        if probe.unmeasured:
            stopped_by = "not_measured"
            break
        samples.append(probe.sample)
        found = estimate()
        if found.high is None:  # nothing failed yet: go on up
            if load >= budget.max_load:
                stopped_by = "max_load"
                break
            load = snap(max(loads) * 2)
            continue
        if found.low is None:  # nothing passed yet: go down
            if load <= (1 if integer else budget.min_load):
                stopped_by = "min_load"
                break
            load = snap(min(loads) / 2)
            continue
        width = found.half_width()
        if width is not None and width <= budget.resolution:
            stopped_by = "resolved"
            break
        if integer and found.high - found.low <= 1:
            stopped_by = "resolved"
            break
        load = snap(_next_load(found, budget.resolution))
    return CurveSearch(loads=loads, interval=found, stopped_by=stopped_by)


def _next_load(found: CapacityInterval, resolution: float) -> float:
    """Where the next step narrows the interval most. The interval's ends are steps known (in
    nearly every bootstrap replicate) to pass and to fail; it is resolved when they are within
    ``resolution`` of the estimate on both sides. So the next step goes just inside
    estimate x (1 +- resolution) on the side that is further from it, on a grid of
    resolution / 2 in log load, so that later steps near the same place add their requests to
    one step until it is decided, rather than starting over at a new load each time."""
    assert found.load is not None
    assert found.low is not None
    assert found.high is not None
    centre = math.log(found.load)
    up, down = math.log(found.high) - centre, centre - math.log(found.low)
    reach = math.log1p(resolution * 0.9)
    target = centre + min(up, reach) if up >= down else centre - min(down, reach)
    grid = math.log1p(resolution / 2)
    toward = math.floor if target > centre else math.ceil  # never past the reach
    snapped = toward(target / grid) * grid
    if not math.log(found.low) < snapped < math.log(found.high):
        snapped = target
    return math.exp(snapped)
