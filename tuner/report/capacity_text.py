"""A capacity search's result in words: the capacity with its interval (or the bracket it lies
in, for results of the earlier search), and why the search stopped where it did (so a figure
cut short by a budget is not read as resolved)."""

from __future__ import annotations

from tuner.measurement import CapacityResult
from tuner.workload import CapacitySearch


def load_text(load: float, unit: str) -> str:
    return f"{load:.3g} {unit}"


def capacity_headline(c: CapacityResult, unit: str) -> str:
    """``capacity 11.2 req/s (interpolated; binding: ttft_p95_ms), between 8 req/s (passed)
    and 16 req/s (failed)``."""
    e = c.estimate
    if c.best is None or e is None:
        tried = min((s.load for s in c.steps), default=None)
        lowest = f" (the lowest tried, {load_text(tried, unit)}, failed)" if tried else ""
        return f"capacity: no load met the SLOs{lowest}"
    if e.high is None:
        return (f"capacity: at least {load_text(e.low, unit)} (passed there; no load that "
                "failed was found)")
    if e.interval is not None and e.interval.load is not None:
        binding = f"; binding: {e.binding}" if e.binding else ""
        return (f"capacity: {e.interval.text(unit)}, {e.interval.level:.0%} interval from "
                f"{e.interval.steps} steps{binding}")
    how = []
    if e.interpolated:
        how.append("interpolated")
    if e.binding:
        how.append(f"binding: {e.binding}")
    detail = f" ({'; '.join(how)})" if how else ""
    return (f"capacity: {load_text(e.load, unit)}{detail}, between "
            f"{load_text(e.low, unit)} (passed) and {load_text(e.high, unit)} (failed)")


def stop_reason(c: CapacityResult, cfg: CapacitySearch, unit: str) -> str:
    """Why the search ended, and what that leaves open."""
    e = c.estimate
    bracket = e is not None and e.high is not None
    if c.best is None:
        still = "before any load passed"
    elif not bracket:
        still = "before any load failed: the capacity may be higher"
    else:
        still = ("before the interval was within the resolution "
                 f"(±{cfg.search_resolution():.0%})")
    reasons = {
        "resolved": f"the interval is within ±{cfg.search_resolution():.0%} of the capacity",
        "converged": f"the bracket is within the tolerance ({cfg.tolerance:.0%})",
        "max_steps": f"the step budget was spent (capacity.max_steps: {cfg.max_steps}) {still}",
        "max_time": f"the time budget was spent (capacity.max_time_s: {cfg.max_time_s:g}) "
                    f"{still}",
        "max_load": f"the highest load allowed passed (capacity.max_load: "
                    f"{load_text(cfg.max_load, unit)}): the capacity may be higher",
        "min_load": f"the lowest load allowed failed (capacity.min_load: "
                    f"{load_text(cfg.min_load, unit)})",
        "client_saturated": "the load generator itself was saturated: the capacity is at least "
                            "the highest load that passed; give it more cores or processes "
                            "(--workers)",
        "not_measured": "a step sent no measured request (see its note), so no load could be "
                        "judged",
    }
    return f"search stopped after {len(c.steps)} steps: " + reasons.get(c.stopped_by,
                                                                         c.stopped_by)
