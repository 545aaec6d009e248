"""The tracking seam, owned by the study loop that uses it; adapters live in tuner.tracking.

Contract: ``start_study`` once per process (it finds the study's existing record
when a study resumes), ``log_trial`` once per finished trial, ``finish_study``
once at the end. Nothing secret is ever passed in. A tracker must not raise for
a trial it cannot record after the study started; it logs and goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from tuner.search.outcome import TrialResult


class Tracker(Protocol):
    def start_study(self, name: str, tags: dict[str, str], params: dict[str, str]) -> None: ...

    def log_trial(self, result: TrialResult) -> None: ...

    def finish_study(self, metrics: dict[str, float], artifacts: list[tuple[str, Path]],
                     texts: dict[str, str]) -> None: ...


class NullTracker:
    def start_study(self, name: str, tags: dict[str, str], params: dict[str, str]) -> None:
        pass

    def log_trial(self, result: TrialResult) -> None:
        pass

    def finish_study(self, metrics: dict[str, float], artifacts: list[tuple[str, Path]],
                     texts: dict[str, str]) -> None:
        pass
