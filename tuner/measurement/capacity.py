"""Capacity search: the highest load at which the SLOs still hold.

Bracket first (double the load while it passes, halve it while it fails), then
bisect between the highest pass and the lowest fail until they are within
``tolerance`` of each other, bounded in steps and wall time. Closed-loop loads
(concurrency) are integers and bisect to neighbours. Each step uses fresh
prompts (its own epoch) so steps do not warm each other's prefix cache. A failing
load is measured again before it counts as failed (``confirm_failures``). A step that failed
while the load generator was saturated is not the engine's failure: it is measured again, and
if the client saturates again the search stops there (``client_saturated``) with the capacity
at least the highest load that passed. A step with no measured request (``not_measured``) is
neither: the search stops there (``not_measured``).

The capacity is then estimated between the bracketing steps (:func:`estimate`): for each
check the failing step failed, the load at which it crosses its bound, linearly interpolated
from its value at the passing and the failing load; the lowest of those is the capacity, and
its check is the binding SLO. Below capacity the engine delivers what is offered, so output
throughput (and cost) at that load scale from the passing step's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, Field

from tuner.measurement.warmup import WarmupResult
from tuner.metrics import RunSummary, SloCheck, cost_per_million
from tuner.workload import CapacitySearch

Step = Callable[[float, int], Awaitable[RunSummary]]
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


async def find_capacity(step: Step, start: float, cfg: CapacitySearch, *, integer: bool = False,
                        clock: Callable[[], float] = time.monotonic) -> CapacityResult:
    """Search with ``step(load, epoch)``; ``integer`` for concurrency."""
    steps: list[RunSummary] = []
    low: RunSummary | None = None
    high: float | None = None
    t_end = clock() + cfg.max_time_s

    def snap(x: float) -> float:
        x = min(max(x, cfg.min_load), cfg.max_load)
        return float(max(1, round(x))) if integer else x

    def budget() -> str | None:
        if len(steps) >= cfg.max_steps:
            return "max_steps"
        if clock() >= t_end:
            return "max_time"
        return None

    saturated = False

    async def measured(load: float) -> RunSummary | None:
        """A step at ``load``; one the saturated client failed is measured again, once; None
        when that failed saturated too (the client, not the engine, is the limit)."""
        summary = await step(load, len(steps))
        steps.append(summary)
        if not summary.slo.passed and summary.client_saturated and budget() is None:
            summary = await step(load, len(steps))
            steps.append(summary)
        if not summary.slo.passed and summary.client_saturated:
            return None
        return summary

    unmeasured = False

    async def run(load: float) -> bool:
        nonlocal low, high, saturated, unmeasured
        summary = await measured(load)
        if summary is None:
            saturated = True
            return False
        if summary.not_measured:  # neither a pass nor a fail: nothing to bracket with
            unmeasured = True
            return False
        if not summary.slo.passed and cfg.confirm_failures and budget() is None:
            # A load fails only if it fails twice: one stalled second (a new batch shape
            # compiled, a noisy neighbour) must not put the bracket below the capacity.
            summary = await measured(load) or summary
        if summary.slo.passed:
            if low is None or load > low.load:
                low = summary
        elif high is None or load < high:
            high = load
        return summary.slo.passed

    load = snap(start)
    stopped_by = "converged"
    # Bracket.
    while (why := budget()) is None:
        passed = await run(load)
        if saturated or unmeasured:
            stopped_by = "client_saturated" if saturated else "not_measured"
            break
        if passed and high is None:
            if load >= cfg.max_load:
                stopped_by = "max_load"
                break
            load = snap(load * 2)
        elif not passed and low is None:
            if load <= (1 if integer else cfg.min_load):
                stopped_by = "min_load"
                break
            load = snap(load / 2)
        else:
            break
    else:
        stopped_by = why
    # Bisect.
    while low is not None and high is not None and stopped_by == "converged":
        if integer and high - low.load <= 1:
            break
        if not integer and (high - low.load) / low.load <= cfg.tolerance:
            break
        if (why := budget()) is not None:
            stopped_by = why
            break
        await run(snap((low.load + high) / 2))
        if saturated or unmeasured:
            stopped_by = "client_saturated" if saturated else "not_measured"
            break
    return CapacityResult(steps=steps, best=low, lowest_failing_load=high, stopped_by=stopped_by,
                          estimate=estimate(steps, low, high, integer=integer))
