"""One run's counters as a progress display shows them: sent, done, errors and running p95s.

Warm-up requests are counted apart (``+k warm-up``): the planned total counts measured
requests only, so ``sent`` never runs past it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tuner.loadgen import RequestRecord


class RunCounters:
    """A run's counters; ``on_finished`` is called when the run ends (the display drops it)."""

    def __init__(self, label: str, planned: int | None,
                 on_finished: Callable[[RunCounters], None]) -> None:
        self.label = label
        self.planned = planned
        self.sent = self.done = self.errors = self.warmup = 0
        self.ttft_ms: list[float] = []
        self.itl_ms: list[float] = []
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
            self.ttft_ms.append(rec.ttft_ns / 1e6)
            self.itl_ms.extend(g / 1e6 for g in rec.itl_ns())

    def finished(self) -> None:
        self._on_finished(self)

    def cells(self) -> list[str]:
        """The counters, one cell each: ``sent 20/60 (+2 warm-up)``, ``done 18``, ..."""
        def p95(xs: list[float]) -> str:
            return f"{np.percentile(xs, 95):.1f} ms" if xs else "-"

        of = f"/{self.planned}" if self.planned else ""
        warm = f" (+{self.warmup} warm-up)" if self.warmup else ""
        return [f"sent {self.sent}{of}{warm}", f"done {self.done}", f"errors {self.errors}",
                f"p95 TTFT {p95(self.ttft_ms)}", f"p95 ITL {p95(self.itl_ms)}"]

    def line(self) -> str:
        return f"{self.label}: " + ", ".join(self.cells())
