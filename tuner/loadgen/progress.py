"""Progress hooks: a small interface the library calls as work goes on; it never prints.

A run reports to its own :class:`RunProgress`, so runs that go on side by side (trials of a
parallel study) keep their own counters. The terminal display lives with the commands
(:mod:`tuner.ui.live_progress`); :data:`NULL_PROGRESS` does nothing.
"""

from __future__ import annotations

from typing import Protocol

from tuner.loadgen.records import RequestRecord


class RunProgress(Protocol):
    """One run's hooks. Implementations must be cheap: they are called per request."""

    def request_sent(self, rec: RequestRecord) -> None: ...

    def request_done(self, rec: RequestRecord) -> None: ...

    def finished(self) -> None: ...


class Progress(Protocol):
    """Hooks the library calls as work goes on. Implementations must be cheap and
    thread-safe (the workers of a parallel study share one)."""

    def status(self, key: str, value: str) -> None:
        """Set a status line (e.g. trial "3/10", phase "measuring at 2.0 req/s")."""

    def note(self, text: str) -> None:
        """A line that stays (e.g. a trial's outcome)."""

    def log(self, text: str) -> None:
        """A line for a log (e.g. a capacity step's outcome): printed where the output is not
        a terminal; a live display shows the same as it happens."""

    def run(self, label: str, planned: int | None) -> RunProgress:
        """A run starts: ``planned`` measured requests (None: open-ended)."""
        ...


class NullRunProgress:
    def request_sent(self, rec: RequestRecord) -> None:
        pass

    def request_done(self, rec: RequestRecord) -> None:
        pass

    def finished(self) -> None:
        pass


class NullProgress:
    """Does nothing; the default for library use and tests."""

    def status(self, key: str, value: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def log(self, text: str) -> None:
        pass

    def run(self, label: str, planned: int | None) -> RunProgress:
        return NULL_RUN


NULL_RUN = NullRunProgress()
NULL_PROGRESS = NullProgress()
