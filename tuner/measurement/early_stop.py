"""Stop a step of the capacity search early, once its SLO is lost with high confidence.

A hopeless load should cost seconds, but a step must not be declared lost on noise (two slow
first tokens among sixteen requests). The rules, checked a few times per second:

- TTFT: of the requests decided so far (a first token came, or the wait is already past the
  bound), the share past the p95 bound is above 5% with ``confidence`` (Clopper-Pearson lower
  bound), once at least ``min_decided`` are decided. Warm-up requests never count.
- Errors: the error rate is above the SLO's bound with the same confidence.
- Queue (open loop only): the requests in flight only grew over the last window of samples and
  are far above the steady state the offered load implies (Little's law: rate x the measured
  latency of completed requests), not merely above zero: every open-loop run ramps from zero
  to that level.
"""

from __future__ import annotations

from collections import deque

from tuner.loadgen import RequestRecord
from tuner.metrics import rate_lower_bound

NS = 1_000_000_000


class SloGuard:
    """Watches the records of a run and says when and why its SLO is lost."""

    def __init__(self, *, ttft_bound_ns: int, max_error_rate: float,
                 offered_rps: float | None = None, quantile: float = 0.95,
                 confidence: float = 0.99, min_decided: int = 10, window: int = 12,
                 backlog_factor: float = 2.0, backlog_slack: int = 4) -> None:
        self.ttft_bound_ns = ttft_bound_ns
        self.max_error_rate = max_error_rate
        self.offered_rps = offered_rps
        self.allowed = 1 - quantile
        self.confidence = confidence
        self.min_decided = min_decided
        self._in_flight: deque[int] = deque(maxlen=window)
        self.backlog_factor = backlog_factor
        self.backlog_slack = backlog_slack

    def check(self, records: list[RequestRecord], now_ns: int) -> str | None:
        """A reason to stop, or None."""
        late = decided = errors = finished = in_flight = 0
        latency_ns = 0
        for r in records:
            if r.warmup or (r.error or "").startswith("cancelled"):
                continue
            if r.error is not None:
                errors += 1
                finished += 1
                continue
            if r.done_ns is None:
                in_flight += 1
            else:
                finished += 1
                latency_ns += r.done_ns - r.sent_ns
            if r.first_token_ns is not None:
                decided += 1
                late += r.first_token_ns - r.sent_ns > self.ttft_bound_ns
            elif now_ns - r.sent_ns > self.ttft_bound_ns:
                decided += 1
                late += 1
        if decided >= self.min_decided:
            low = rate_lower_bound(late, decided, self.confidence)
            if low > self.allowed:
                return (f"{late} of {decided} requests past the TTFT bound: p95 lost with "
                        f"{self.confidence:.0%} confidence")
        if finished >= self.min_decided and errors:
            low = rate_lower_bound(errors, finished, self.confidence)
            if low > self.max_error_rate:
                return (f"{errors} errors in {finished} requests: over the error-rate bound "
                        f"with {self.confidence:.0%} confidence")
        return self._backlog(in_flight, finished - errors, latency_ns)

    def _backlog(self, in_flight: int, completed: int, latency_ns: int) -> str | None:
        self._in_flight.append(in_flight)
        samples = list(self._in_flight)
        if self.offered_rps is None or completed == 0 or len(samples) != self._in_flight.maxlen:
            return None
        steady = self.offered_rps * latency_ns / completed / NS
        limit = self.backlog_factor * steady + self.backlog_slack
        growing = all(b >= a for a, b in zip(samples, samples[1:], strict=False))
        if growing and samples[-1] > samples[0] and samples[-1] > limit:
            return (f"queue only grows ({samples[0]} -> {samples[-1]} in flight, steady state "
                    f"at this load about {steady:.1f})")
        return None
