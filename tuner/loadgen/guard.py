"""Stop a run early once its SLO is already lost, so a hopeless load costs seconds.

Three signals, checked as the run goes:
- TTFT: more requests past the p95 TTFT bound than a p95 can absorb. With n measured
  requests and linear-interpolated percentiles, p95 > bound for certain once
  ``n - floor(0.95 * (n - 1))`` requests are past it. Requests still waiting for their
  first token longer than the bound count as past it.
- errors: more errors than ``max_error_rate * n``.
- queue: the number of requests in flight only grows over the last window of samples.
"""

from __future__ import annotations

import math
from collections import deque

from tuner.loadgen.records import RequestRecord


def lost_after(n: int, quantile: float = 0.95) -> int:
    """How many of ``n`` values past a bound put the ``quantile`` past it for certain."""
    return n - math.floor(quantile * (n - 1))


class SloGuard:
    """Watches the records of a run and says when and why its SLO is lost."""

    def __init__(self, *, planned: int | None, ttft_bound_ns: int, max_error_rate: float,
                 window: int = 12, min_growth: int = 8) -> None:
        self.planned = planned
        self.ttft_bound_ns = ttft_bound_ns
        self.max_error_rate = max_error_rate
        self._in_flight: deque[int] = deque(maxlen=window)
        self._min_growth = min_growth

    def check(self, records: list[RequestRecord], now_ns: int) -> str | None:
        """A reason to stop, or None. Call a few times per second."""
        measured = [r for r in records if not r.warmup]
        late = errors = in_flight = 0
        for r in measured:
            if r.done_ns is None and r.error is None:
                in_flight += 1
            if r.error is not None and not r.error.startswith("cancelled"):
                errors += 1
            elif r.first_token_ns is not None:
                late += r.first_token_ns - r.sent_ns > self.ttft_bound_ns
            elif now_ns - r.sent_ns > self.ttft_bound_ns:
                late += 1
        self._in_flight.append(in_flight)
        if self.planned:
            limit = lost_after(self.planned)
            if late >= limit:
                return f"{late} requests past the TTFT bound, p95 cannot hold (limit {limit})"
            if errors > self.max_error_rate * self.planned:
                return f"{errors} errors, over the error-rate bound"
        elif len(measured) >= 20 and errors > self.max_error_rate * len(measured):
            return f"{errors} errors in {len(measured)} requests, over the error-rate bound"
        samples = list(self._in_flight)
        if (len(samples) == self._in_flight.maxlen
                and all(b >= a for a, b in zip(samples, samples[1:], strict=False))
                and samples[-1] - samples[0] >= max(self._min_growth, samples[0] // 2)):
            return f"queue only grows ({samples[0]} -> {samples[-1]} in flight)"
        return None
