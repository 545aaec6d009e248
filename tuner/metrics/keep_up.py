"""Did the engine keep up with the offered load? Percentiles alone cannot say: in a short step
an overloaded engine's backlog may not yet have reached the p95 TTFT.

Over the steady window of an open-loop run (first send ``a`` to last send ``b``, less the ramp
``r``, the median end-to-end latency, at most half the window):

- throughput: output tokens delivered in ``[a + r, b]`` against the output tokens planned for
  the requests sent in ``[a, b - r]``: the same length of time, shifted by the latency, so an
  engine that keeps up delivers what was offered (ratio about 1) and one that falls behind
  delivers less. The window holds whole requests on one side and tokens on the other, so a
  short step can miss up to one request's tokens by where its edges fall: the check allows
  the largest request offered (:meth:`KeepUp.ratio_high`), which in a 10-request step is a
  tenth of the load and in a 1000-request step nothing;
- backlog: requests in flight at ``b`` against the steady state the load implies (Little's
  law: send rate x the median latency of the earliest third of the completed requests, taken
  before a backlog, if any, has built up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tuner.loadgen import RequestRecord

NS = 1_000_000_000


@dataclass(frozen=True)
class KeepUp:
    offered_tokens_per_s: float
    delivered_tokens_per_s: float
    in_flight: int
    steady_in_flight: float
    largest_request_tokens: float = 0.0
    """The most output tokens one offered request planned, per second of the window."""

    @property
    def ratio(self) -> float:
        """Delivered / offered output tokens over the steady window."""
        return self.delivered_tokens_per_s / self.offered_tokens_per_s

    def ratio_high(self) -> float:
        """The ratio with one request's tokens more: what the window's edges may hide."""
        return (self.delivered_tokens_per_s + self.largest_request_tokens
                ) / self.offered_tokens_per_s

    def backlog_limit(self, factor: float = 3.0, slack: int = 8) -> float:
        return factor * self.steady_in_flight + slack


def keep_up(records: Sequence[RequestRecord]) -> KeepUp | None:
    """The steady window's figures of measured ``records`` (None: too short to judge)."""
    if len(records) < 4:
        return None
    sends = np.array([r.sent_ns for r in records], dtype=np.int64)
    a, b = int(sends.min()), int(sends.max())
    latencies = [r.done_ns - r.sent_ns for r in records if r.ok and r.done_ns is not None]
    ramp = int(np.median(latencies)) if latencies else (b - a) // 2
    ramp = min(ramp, (b - a) // 2)
    span = b - a - ramp
    if span <= 0:
        return None
    planned = [r.planned_output_tokens for r in records if a <= r.sent_ns <= b - ramp]
    offered = sum(planned)
    delivered = sum(tokens for r in records
                    for at, tokens in zip(r.chunk_ns, r.chunk_tokens, strict=False)
                    if a + ramp <= at <= b)
    if offered <= 0:
        return None
    in_flight = sum(1 for r in records if r.sent_ns <= b and r.error is None
                    and (r.done_ns is None or r.done_ns > b))
    rate = len(records) / ((b - a) / NS) if b > a else 0.0
    early = sorted((r for r in records if r.ok and r.done_ns is not None),
                   key=lambda r: r.sent_ns)
    early = early[:max(1, len(early) // 3)]
    early_latency_s = (float(np.median([r.done_ns - r.sent_ns for r in early])) / NS  # type: ignore[operator]  # ok implies done_ns
                       if early else 0.0)
    return KeepUp(offered_tokens_per_s=offered / (span / NS),
                  delivered_tokens_per_s=delivered / (span / NS), in_flight=in_flight,
                  steady_in_flight=rate * early_latency_s,
                  largest_request_tokens=max(planned) / (span / NS))
