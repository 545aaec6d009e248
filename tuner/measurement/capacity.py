"""Capacity search: the highest load at which the SLOs still hold.

Bracket first (double the load while it passes, halve it while it fails), then
bisect between the highest pass and the lowest fail until they are within
``tolerance`` of each other, bounded in steps and wall time. Closed-loop loads
(concurrency) are integers and bisect to neighbours. Each step uses fresh
prompts (its own epoch) so steps do not warm each other's prefix cache.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from pydantic import BaseModel

from tuner.metrics.run_summary import RunSummary
from tuner.workload.models import CapacitySearch

Step = Callable[[float, int], Awaitable[RunSummary]]


class CapacityResult(BaseModel):
    """Every step, and the best passing one (None: no load met the SLOs)."""

    steps: list[RunSummary]
    best: RunSummary | None
    lowest_failing_load: float | None
    stopped_by: str

    @property
    def max_load(self) -> float | None:
        return None if self.best is None else self.best.load


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

    async def run(load: float) -> bool:
        nonlocal low, high
        summary = await step(load, len(steps))
        steps.append(summary)
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
    return CapacityResult(steps=steps, best=low, lowest_failing_load=high, stopped_by=stopped_by)
