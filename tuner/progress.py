"""Progress hooks: a small interface with a rich implementation and a null one.

The library calls these hooks; it never prints. ``RichProgress`` shows a live
panel (status lines, the current run's sent/done/errors and running p95s) and
routes log records through the same console so they do not tear the display.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from tuner.loadgen.records import RequestRecord


class Progress(Protocol):
    """Hooks the library calls as work goes on. Implementations must be cheap."""

    def status(self, key: str, value: str) -> None:
        """Set a status line (e.g. trial "3/10", phase "measuring at 2.0 req/s")."""

    def note(self, text: str) -> None:
        """A line that stays (e.g. a trial's outcome)."""

    def run_started(self, label: str, planned: int | None) -> None: ...

    def request_sent(self, rec: RequestRecord) -> None: ...

    def request_done(self, rec: RequestRecord) -> None: ...

    def run_finished(self) -> None: ...


class NullProgress:
    """Does nothing; the default for library use and tests."""

    def status(self, key: str, value: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def run_started(self, label: str, planned: int | None) -> None:
        pass

    def request_sent(self, rec: RequestRecord) -> None:
        pass

    def request_done(self, rec: RequestRecord) -> None:
        pass

    def run_finished(self) -> None:
        pass


NULL_PROGRESS = NullProgress()


class RichProgress:
    """A live terminal panel. Use as a context manager around the work."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._status: dict[str, str] = {}
        self._label = ""
        self._planned: int | None = None
        self._sent = self._done = self._errors = 0
        self._ttft: list[float] = []
        self._itl: list[float] = []
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

    def run_started(self, label: str, planned: int | None) -> None:
        self._label, self._planned = label, planned
        self._sent = self._done = self._errors = 0
        self._ttft, self._itl = [], []

    def request_sent(self, rec: RequestRecord) -> None:
        self._sent += 1

    def request_done(self, rec: RequestRecord) -> None:
        self._done += 1
        if rec.error is not None:
            self._errors += 1
        elif not rec.warmup and rec.ttft_ns is not None:
            self._ttft.append(rec.ttft_ns / 1e6)
            self._itl.extend(g / 1e6 for g in rec.itl_ns())

    def run_finished(self) -> None:
        pass

    def _render(self) -> Group:
        lines = [Text.assemble((f"{k}: ", "bold"), v) for k, v in self._status.items()]
        table = Table.grid(padding=(0, 2))
        of = f"/{self._planned}" if self._planned else ""

        def p95(xs: list[float]) -> str:
            return f"{np.percentile(xs, 95):.1f} ms" if xs else "-"

        table.add_row(Text(self._label, style="cyan"), f"sent {self._sent}{of}",
                      f"done {self._done}", f"errors {self._errors}",
                      f"p95 TTFT {p95(self._ttft)}", f"p95 ITL {p95(self._itl)}")
        return Group(*lines, table)
