"""Values that are valid but probably not what was meant, found before minutes are spent on
them: SLOs a thousand times too tight (seconds written as milliseconds?), a rate the stop
condition cannot send, a concurrency the run never reaches."""

from __future__ import annotations

from tuner.workload.arrivals import ConcurrencyArrivals
from tuner.workload.models import Workload

LEAST_BURST_S = 2.0
LEAST_REQUESTS = 10


def implausible(w: Workload) -> list[str]:
    """One line per value that is probably a mistake, naming it and the likely fix."""
    found = []
    for metric, value in w.slo.bounds().items():
        assert metric.slo is not None
        key, least = metric.slo.field, metric.slo.least_plausible
        if least is not None and value < least:
            found.append(f"slo.{key} is {value:g} ms, faster than any engine serves: seconds "
                         f"written as milliseconds? ({value:g} s is {value * 1000:g})")
    return found


def implausible_run(w: Workload) -> list[str]:
    """The same for one run at the workload's load and stop (``tune bench`` without a capacity
    search; a search's steps last as long as their requests need)."""
    found: list[str] = []
    arrival, stop = w.arrival, w.stop
    if isinstance(arrival, ConcurrencyArrivals):
        if stop.requests is not None and stop.requests < arrival.concurrency:
            found.append(f"arrival.concurrency {arrival.concurrency} with stop.requests "
                         f"{stop.requests}: the run never has {arrival.concurrency} requests "
                         "in flight; give more requests or a lower concurrency")
        return found
    rate = arrival.load
    span = None if stop.requests is None else stop.requests / rate
    if stop.duration_s is not None:
        span = stop.duration_s if span is None else min(span, stop.duration_s)
    if stop.requests is not None and span is not None and span < LEAST_BURST_S:
        found.append(f"{rate:g} {w.load_unit} with stop.requests {stop.requests}: every request "
                     f"goes out in {span:.2g} s, a burst rather than that rate; give more "
                     "requests or stop.duration_s")
    elif span is not None and rate * span < LEAST_REQUESTS:
        found.append(f"{rate:g} {w.load_unit} for {span:g} s sends about {rate * span:.0f} "
                     "requests, too few to judge a p95; give a longer stop.duration_s")
    return found
