"""A capacity search's result: its steps, the step that stands for the capacity, and the
estimate with its interval.

The search itself is :mod:`tuner.measurement.curve_search` (steps placed where they narrow
the capacity's interval, every step's requests counting). :func:`capacity_of` turns what it
found into the result the rest of the package reads. Below capacity the engine delivers what
is offered, so output throughput (and cost) at the capacity scale from the step that stands
for it. :func:`estimate` is the earlier estimate between two bracketing steps (for each check
the failing step failed, the load at which it crosses its bound, linearly interpolated), which
simulated trials still use.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tuner.measurement.curve_search import CurveSearch
from tuner.measurement.warmup import WarmupResult
from tuner.metrics import CapacityInterval, RunSummary, SloCheck, cost_per_million

AT_LEAST = ("throughput",)
"""Checks that hold while their value stays at or above the bound (the rest: at or below)."""


class CapacityEstimate(BaseModel):
    """The load at which the binding SLO is crossed, between the bracketing steps."""

    load: float
    low: float = Field(description="the highest load that passed")
    high: float | None = Field(description="the lowest load that failed (None: none did)")
    binding: str | None = Field(description="the check that fails first as load grows")
    interpolated: bool
    output_tokens_per_s: float
    cost_per_m_output_tokens: float | None
    interval: CapacityInterval | None = Field(default=None, description="the capacity's 95% "
                                              "interval from every step (searches since the "
                                              "curve search)")


class CapacityResult(BaseModel):
    """Every step, the best passing one (None: no load met the SLOs) and the estimate."""

    steps: list[RunSummary]
    best: RunSummary | None
    lowest_failing_load: float | None
    stopped_by: str
    estimate: CapacityEstimate | None = None
    warmup: WarmupResult | None = None

    @property
    def max_load(self) -> float | None:
        return None if self.best is None else self.best.load


def _crossing(name: str, low: SloCheck, high: SloCheck) -> float | None:
    """Where between the two steps (0: the passing, 1: the failing) ``name`` meets its bound."""
    if low.value is None or high.value is None or low.value == high.value:
        return None
    bound = high.bound
    if name in AT_LEAST:
        frac = (low.value - bound) / (low.value - high.value)
    else:
        frac = (bound - low.value) / (high.value - low.value)
    return min(1.0, max(0.0, frac))


def estimate(steps: list[RunSummary], best: RunSummary | None, failing: float | None, *,
             integer: bool = False) -> CapacityEstimate | None:
    """The capacity between the passing step ``best`` and the lowest failing load."""
    if best is None:
        return None
    load, binding, interpolated = best.load, None, False
    fail = next((s for s in steps if failing is not None and s.load == failing
                 and not s.stopped_early), None)
    if fail is None and failing is not None:
        cut = next((s for s in steps if s.load == failing), None)
        binding = ", ".join(cut.slo.failed()) if cut else None
        binding = binding or "stopped early"
    if fail is not None:
        passed = {c.name: c for c in best.slo.checks}
        points = [(frac, c.name) for c in fail.slo.checks if not c.ok and c.name in passed
                  and (frac := _crossing(c.name, passed[c.name], c)) is not None]
        if points and not integer:
            frac, binding = min(points)
            load = best.load + frac * (fail.load - best.load)
            interpolated = True
        else:
            binding = ", ".join(fail.slo.failed()) or None
    tokens = best.output_token_throughput * load / best.load
    return CapacityEstimate(load=load, low=best.load, high=failing, binding=binding,
                            interpolated=interpolated, output_tokens_per_s=tokens,
                            cost_per_m_output_tokens=cost_per_million(best.usd_per_hour, tokens))


def interpolated(ci: CapacityInterval, step_load: float) -> bool:
    """Whether the capacity's point was interpolated between its steps (False: it is known
    only to lie in its bracket; searches that did not record it: whether it is off the
    step)."""
    if ci.load is None:
        return False
    return ci.interpolated if ci.interpolated is not None else ci.load != step_load


def capacity_of(steps: list[RunSummary], found: CurveSearch) -> CapacityResult:
    """The search's result as a CapacityResult: its steps, the step whose figures stand for the
    capacity (the highest load that passed at or below it) and the estimate with its interval.

    Bracketed, the estimate is the interval's point, between the loads known to pass and to
    fail. Not bracketed above (nothing failed), the estimate is the lower bound, and its
    ``high`` is None: every output shows it as "at least". Nothing passed: no estimate."""
    ci = found.interval
    best = None
    if ci.low is not None:
        below = [s for s in steps if s.load <= (ci.load or ci.low) and not s.not_measured]
        passed = [s for s in below if s.slo.passed]
        chosen = passed or [s for s in below if s.load == ci.low]
        best = max(chosen, key=lambda s: s.load) if chosen else None
    est = None
    if best is not None and ci.low is not None:
        load = ci.load if ci.load is not None else ci.low
        tokens = best.output_token_throughput * load / best.load
        est = CapacityEstimate(load=load, low=ci.low, high=ci.high, binding=ci.binding,
                               interpolated=interpolated(ci, best.load),
                               output_tokens_per_s=tokens,
                               cost_per_m_output_tokens=cost_per_million(best.usd_per_hour,
                                                                         tokens),
                               interval=ci)
    return CapacityResult(steps=steps, best=best, lowest_failing_load=ci.high,
                          stopped_by=found.stopped_by, estimate=est)
