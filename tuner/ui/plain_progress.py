"""Progress as plain lines, for output that is not a terminal (CI logs, ``| tee``, nohup).

A live panel shows nothing there until the end; this prints, as work goes on: each status
change (a trial starting, a phase), each note (a trial's outcome), each logged line (a step's
outcome), and every ``every_s`` seconds a line per run in progress. Status values that differ
only in their numbers (``starting engine (12s)``) are printed at most every ``every_s``.
"""

from __future__ import annotations

import re
import threading
import time
from types import TracebackType

from rich.console import Console

from tuner.loadgen import RunProgress
from tuner.ui.run_counters import RunCounters

EVERY_S = 15.0
_DIGITS = re.compile(r"\d+(\.\d+)?")


class PlainProgress:
    """Lines on ``console``; thread-safe (the trials of a parallel study share one)."""

    def __init__(self, console: Console, every_s: float = EVERY_S) -> None:
        self.console = console
        self.every_s = every_s
        self._rows: list[RunCounters] = []
        self._shown: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True,
                                        name="tuner-progress-lines")

    def __enter__(self) -> PlainProgress:
        self._ticker.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._ticker.join(timeout=2)

    def _print(self, text: str) -> None:
        with self._lock:
            self.console.print(text, highlight=False, markup=False, soft_wrap=True)
            self.console.file.flush()

    def status(self, key: str, value: str) -> None:
        now = time.monotonic()
        shape = _DIGITS.sub("#", value)
        with self._lock:
            last = self._shown.get(key)
            if last is not None and (last[0] == value or (
                    _DIGITS.sub("#", last[0]) == shape and now - last[1] < self.every_s)):
                return
            self._shown[key] = (value, now)
        self._print(f"{key}: {value}")

    def note(self, text: str) -> None:
        self._print(text)

    def log(self, text: str) -> None:
        self._print(text)

    def run(self, label: str, planned: int | None) -> RunProgress:
        row = RunCounters(label, planned, self._drop)
        with self._lock:
            self._rows.append(row)
        return row

    def _drop(self, row: RunCounters) -> None:
        with self._lock:
            if row in self._rows:
                self._rows.remove(row)

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                rows = list(self._rows)
            for row in rows:
                self._print(row.line())
