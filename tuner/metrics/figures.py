"""The figures a serving team is judged on, each a small function with its formula.

Times are kept in nanoseconds and shown in milliseconds. Percentiles are numpy's
linear interpolation. Only measured requests count: warm-up and requests
cancelled by an early stop are left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from tuner.loadgen import RequestRecord
from tuner.metrics.quantiles import quantile_interval

MS = 1e6


class Dist(BaseModel):
    """Summary of one latency, in milliseconds."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    max: float | None
    p95_low: float | None = None
    """The p95's 95% distribution-free interval (None: too few values to bound that side)."""
    p95_high: float | None = None


def dist_ms(values_ns: Sequence[float]) -> Dist:
    if len(values_ns) == 0:
        return Dist(count=0, mean=None, p50=None, p90=None, p95=None, p99=None, max=None)
    arr = np.asarray(values_ns, dtype=np.float64) / MS
    p50, p90, p95, p99 = np.percentile(arr, [50, 90, 95, 99])
    low, high = quantile_interval(arr.tolist(), 0.95)
    return Dist(count=len(arr), mean=float(arr.mean()), p50=float(p50), p90=float(p90),
                p95=float(p95), p99=float(p99), max=float(arr.max()), p95_low=low,
                p95_high=high)


def measured(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Records that count: not warm-up, not cancelled by the harness."""
    return [r for r in records
            if not r.warmup and not (r.error or "").startswith("cancelled")]


def ttft_ns(records: Sequence[RequestRecord]) -> list[int]:
    """TTFT = first token-bearing chunk - send time, per successful request."""
    return [r.ttft_ns for r in records if r.ok and r.ttft_ns is not None]


def itl_ns(records: Sequence[RequestRecord]) -> list[float]:
    """ITL = gap between consecutive token arrivals, pooled over successful requests
    (a chunk with k tokens after a gap g contributes k gaps of g/k)."""
    return [g for r in records if r.ok for g in r.itl_ns()]


def tpot_ns(records: Sequence[RequestRecord]) -> list[float]:
    """TPOT = (e2e - TTFT) / (output tokens - 1), per successful request with >= 2 tokens."""
    return [t for r in records if (t := r.tpot_ns()) is not None]


def e2e_ns(records: Sequence[RequestRecord]) -> list[int]:
    """E2E = completion time - send time, per successful request."""
    return [r.e2e_ns for r in records if r.ok and r.e2e_ns is not None]


def window_ns(records: Sequence[RequestRecord]) -> int:
    """Measured window = last completion (or last chunk) - first send."""
    if not records:
        return 0
    start = min(r.sent_ns for r in records)
    ends = [r.done_ns or (r.chunk_ns[-1] if r.chunk_ns else r.sent_ns) for r in records]
    return max(ends) - start


def error_rate(records: Sequence[RequestRecord]) -> float:
    """Errors / measured requests."""
    return sum(r.error is not None for r in records) / len(records) if records else 0.0


def meets_slo(rec: RequestRecord, ttft: int, itl: int, e2e: int | None) -> bool:
    """Per request: ok, TTFT <= bound, TPOT (its mean ITL) <= ITL bound, E2E <= bound."""
    if not rec.ok or rec.ttft_ns is None or rec.ttft_ns > ttft:
        return False
    tpot = rec.tpot_ns()
    if tpot is not None and tpot > itl:
        return False
    return e2e is None or (rec.e2e_ns or 0) <= e2e
