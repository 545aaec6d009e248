"""The terminal display of :class:`tuner.loadgen.progress.Progress`: a live panel.

Status lines, then one row per run in progress (its own sent/done/errors and running
p95s; warm-up requests are not counted), with log records routed through the same
console so they do not tear the display.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text

from tuner.loadgen.progress import RunProgress
from tuner.loadgen.records import RequestRecord


class RunRow:
    """One run's counters, shown as a row while the run goes on."""

    def __init__(self, owner: RichProgress, label: str, planned: int | None) -> None:
        self._owner = owner
        self.label = label
        self.planned = planned
        self.sent = self.done = self.errors = 0
        self.ttft_ms: list[float] = []
        self.itl_ms: list[float] = []

    def request_sent(self, rec: RequestRecord) -> None:
        if not rec.warmup:
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
        self._owner.drop(self)

    def cells(self) -> list[str | Text]:
        def p95(xs: list[float]) -> str:
            return f"{np.percentile(xs, 95):.1f} ms" if xs else "-"

        of = f"/{self.planned}" if self.planned else ""
        return [Text(self.label, style="cyan"), f"sent {self.sent}{of}", f"done {self.done}",
                f"errors {self.errors}", f"p95 TTFT {p95(self.ttft_ms)}",
                f"p95 ITL {p95(self.itl_ms)}"]


class RichProgress:
    """A live terminal panel. Use as a context manager around the work."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._status: dict[str, str] = {}
        self._rows: list[RunRow] = []
        self._lock = threading.Lock()
        self._live = Live(console=self.console, refresh_per_second=4, transient=True,
                          get_renderable=self._render)
        self._handler = RichHandler(console=self.console, show_path=False, markup=False)
        self._saved: list[logging.Handler] = []

    def __enter__(self) -> RichProgress:
        root = logging.getLogger()
        self._saved = root.handlers[:]
        root.handlers = [self._handler]
        self._live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._live.stop()
        logging.getLogger().handlers = self._saved

    def status(self, key: str, value: str) -> None:
        self._status[key] = value

    def note(self, text: str) -> None:
        self.console.print(text)

    def run(self, label: str, planned: int | None) -> RunProgress:
        row = RunRow(self, label, planned)
        with self._lock:
            self._rows.append(row)
        return row

    def drop(self, row: RunRow) -> None:
        with self._lock:
            if row in self._rows:
                self._rows.remove(row)

    def _render(self) -> Group:
        lines = [Text.assemble((f"{k}: ", "bold"), v) for k, v in list(self._status.items())]
        table = Table.grid(padding=(0, 2))
        with self._lock:
            rows = list(self._rows)
        for row in rows:
            table.add_row(*row.cells())
        return Group(*lines, table)
