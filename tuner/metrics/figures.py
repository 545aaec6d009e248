"""The figures a serving team is judged on, each a small function with its formula.

Times are kept in nanoseconds and shown in milliseconds. Percentiles are numpy's
linear interpolation. Only measured requests count: warm-up and requests
cancelled by an early stop are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from tuner.loadgen import RequestRecord
from tuner.metric_registry import Latency, Metric
from tuner.metrics.quantiles import LARGE, large_sample_ranks, quantile_interval
from tuner.metrics.selection import Blocks, lerp, order_statistics, percentile_ranks

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


def dist_ms(values_ns: Sequence[float] | npt.NDArray[np.float64], *,
            consume: bool = False) -> Dist:
    """The distribution of ``values_ns`` in milliseconds. ``consume``: ``values_ns`` is a
    float64 array nobody reads after, so it is divided and reordered in place (a long run's
    ITL gaps number millions: the figures then hold one array of them, not three)."""
    if len(values_ns) == 0:
        return Dist(count=0, mean=None, p50=None, p90=None, p95=None, p99=None, max=None)
    if consume and isinstance(values_ns, np.ndarray) and values_ns.dtype == np.float64:
        arr = values_ns
        arr /= MS
    else:
        arr = np.asarray(values_ns, dtype=np.float64) / MS
    mean, top = float(arr.mean()), float(arr.max())  # before the array is reordered
    p50, p90, p95, p99 = np.percentile(arr, [50, 90, 95, 99], overwrite_input=True)
    low, high = quantile_interval(arr, 0.95, in_place=True)
    return Dist(count=len(arr), mean=mean, p50=float(p50), p90=float(p90), p95=float(p95),
                p99=float(p99), max=top, p95_low=low, p95_high=high)


def measured(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Records that count: not warm-up, not cancelled by the harness."""
    return [r for r in records
            if not r.warmup and not (r.error or "").startswith("cancelled")]


HOLD = 1 << 19
"""Values a latency's figures hold at once (4 MB): more are read again as often as their
percentiles need (``selection.py``)."""
BLOCK = 1 << 16


def latency_dist(latency: Latency, records: Sequence[RequestRecord], *, hold: int = HOLD
                 ) -> Dist:
    """A latency's distribution over the records, as the registry reads each request. Up to
    ``hold`` values (a run's TTFTs; its ITL gaps up to about 4,000 requests of 128 tokens)
    are held in one array; past that they are read from the records again, in blocks, so a
    long run's millions of ITL gaps are never all in memory."""
    def blocks() -> Iterator[npt.NDArray[np.float64]]:
        parts: list[npt.NDArray[np.float64]] = []
        size = 0
        for r in records:
            part = np.asarray(latency.values_ns(r), dtype=np.float64)
            if part.size:
                parts.append(part)
                size += part.size
            if size >= BLOCK:
                yield np.concatenate(parts)
                parts, size = [], 0
        if parts:
            yield np.concatenate(parts)
    return streamed_dist_ms(blocks, hold=hold)


def streamed_dist_ms(blocks: Blocks, *, hold: int = HOLD) -> Dist:
    """:func:`dist_ms` of every value ``blocks()`` yields (ns), holding at most ``hold`` of
    them: the same figures (the mean may differ in its last bits, summed block by block)."""
    hold = max(hold, LARGE)  # past it, the interval's ranks come from the normal law
    n, total, top = 0, 0.0, -math.inf
    kept: list[npt.NDArray[np.float64]] = []
    for block in blocks():
        if block.size == 0:
            continue
        n += block.size
        total += float(block.sum())
        top = max(top, float(block.max()))
        if n <= hold:
            kept.append(block)
        else:
            kept.clear()
    if n <= hold:
        return dist_ms(np.concatenate(kept) if kept else np.empty(0), consume=True)
    percents = percentile_ranks(n, [50, 90, 95, 99])
    low_r, high_r = large_sample_ranks(n, 0.95, 0.95)
    ends = [r - 1 for r in (low_r, high_r) if 1 <= r <= n]
    at = order_statistics(blocks, [*(r for a, b, _ in percents for r in (a, b)), *ends])
    p50, p90, p95, p99 = (lerp(at[a] / MS, at[b] / MS, t) for a, b, t in percents)
    return Dist(count=n, mean=total / n / MS, p50=p50, p90=p90, p95=p95, p99=p99,
                max=top / MS,
                p95_low=at[low_r - 1] / MS if 1 <= low_r <= n else None,
                p95_high=at[high_r - 1] / MS if 1 <= high_r <= n else None)


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


def meets_slo(rec: RequestRecord, bounds_ns: dict[Metric, float]) -> bool:
    """Per request: ok, and each bounded latency's value for it within its bound (TTFT; the
    mean ITL, its TPOT, against the ITL bound; E2E); see the registry's ``per_request``."""
    if not rec.ok:
        return False
    for metric, bound in bounds_ns.items():
        assert metric.slo is not None
        assert metric.slo.per_request is not None
        value = metric.slo.per_request(rec)
        if value is None and not metric.slo.absent_passes:
            return False
        if value is not None and value > bound:
            return False
    return True
