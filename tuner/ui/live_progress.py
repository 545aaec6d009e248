"""The terminal display of :class:`tuner.loadgen.progress.Progress`: a live panel.

Status lines, then one row per run in progress (its own sent/done/errors and running
p95s; warm-up requests are counted apart), with log records routed through the same
console so they do not tear the display.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from rich.console import Console, Group
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text

from tuner.loadgen import RunProgress
from tuner.ui.run_counters import RunCounters


class RichProgress:
    """A live terminal panel. Use as a context manager around the work."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._status: dict[str, str] = {}
        self._rows: list[RunCounters] = []
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
        self.console.print(text, highlight=False)

    def log(self, text: str) -> None:
        """The live rows show it as it happens; a line is for logs (see PlainProgress)."""

    def run(self, label: str, planned: int | None) -> RunProgress:
        row = RunCounters(label, planned, self.drop)
        with self._lock:
            self._rows.append(row)
        return row

    def drop(self, row: RunCounters) -> None:
        with self._lock:
            if row in self._rows:
                self._rows.remove(row)

    def _render(self) -> Group:
        lines = [Text.assemble((f"{k}: ", "bold"), v) for k, v in list(self._status.items())]
        table = Table.grid(padding=(0, 2))
        with self._lock:
            rows = list(self._rows)
        for row in rows:
            table.add_row(Text(row.label, style="cyan"), *row.cells())
        return Group(*lines, table)
