"""One run's counters as a progress display shows them: sent, done, errors and running p95s.

Warm-up requests are counted apart (``+k warm-up``): the planned total counts measured
requests only, so ``sent`` never runs past it. The running p95s are read off counts in bins
0.1% wide, so a run of any length holds them in the same 160 KB (a 30-minute run streams
millions of tokens); the run's own figures are computed from its records, exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from tuner.loadgen import RequestRecord


class BinnedQuantile:
    """A running quantile of values in milliseconds, in constant memory: counts in bins
    0.1% wide on a log scale from 1 us to 1000 s (values outside go to the end bins)."""

    LOW_MS = 1e-3
    STEP = math.log1p(0.001)
    BINS = math.ceil(math.log(1e6 / LOW_MS) / STEP) + 1

    def __init__(self) -> None:
        self.counts = np.zeros(self.BINS, dtype=np.int64)
        self.n = 0

    def add(self, values_ms: Sequence[float] | npt.NDArray[np.float64]) -> None:
        arr = np.asarray(values_ms, dtype=np.float64)  # an array as it is: no float a value
        if arr.size == 0:
            return
        scaled = np.log(np.maximum(arr, self.LOW_MS) / self.LOW_MS) / self.STEP
        np.add.at(self.counts, np.minimum(scaled.astype(np.int64), self.BINS - 1), 1)
        self.n += arr.size

    def quantile(self, q: float) -> float | None:
        """The q-quantile, as the middle of its bin (within 0.05%); None before any value."""
        if self.n == 0:
            return None
        rank = min(self.n, max(1, math.ceil(q * self.n)))
        k = int(np.searchsorted(np.cumsum(self.counts), rank))
        return self.LOW_MS * math.exp((k + 0.5) * self.STEP)


class RunCounters:
    """A run's counters; ``on_finished`` is called when the run ends (the display drops it)."""

    def __init__(self, label: str, planned: int | None,
                 on_finished: Callable[[RunCounters], None]) -> None:
        self.label = label
        self.planned = planned
        self.sent = self.done = self.errors = self.warmup = 0
        self.ttft_ms = BinnedQuantile()
        self.itl_ms = BinnedQuantile()
        self._on_finished = on_finished

    def request_sent(self, rec: RequestRecord) -> None:
        if rec.warmup:
            self.warmup += 1
        else:
            self.sent += 1

    def request_done(self, rec: RequestRecord) -> None:
        if rec.warmup:
            return
        self.done += 1
        if rec.error is not None:
            self.errors += 1
        elif rec.ttft_ns is not None:
            self.ttft_ms.add((rec.ttft_ns / 1e6,))
            self.itl_ms.add(rec.itl_ns() / 1e6)

    def finished(self) -> None:
        self._on_finished(self)

    def cells(self) -> list[str]:
        """The counters, one cell each: ``sent 20/60 (+2 warm-up)``, ``done 18``, ..."""
        def p95(values: BinnedQuantile) -> str:
            value = values.quantile(0.95)
            return "-" if value is None else f"{value:.1f} ms"

        of = f"/{self.planned}" if self.planned else ""
        warm = f" (+{self.warmup} warm-up)" if self.warmup else ""
        return [f"sent {self.sent}{of}{warm}", f"done {self.done}", f"errors {self.errors}",
                f"p95 TTFT {p95(self.ttft_ms)}", f"p95 ITL {p95(self.itl_ms)}"]

    def line(self) -> str:
        return f"{self.label}: " + ", ".join(self.cells())
