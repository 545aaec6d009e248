"""The tracking seam, owned by the study loop that uses it; adapters live in tuner.tracking.

Contract: ``start_study`` once per process: given the study's stored parent id it joins that
record, else it finds the study's existing record (a resumed study) or makes one, and returns
its id; ``log_trial`` once per finished trial (from any number of processes on one study);
``finish_study`` once at the end, by the process that writes the study's summary, with the
re-measurement's fresh starts (each its own record);
``catch_up`` once a study is joined, with this host's finished trials (it records those the
store lacks: a run stopped between storing a trial and recording it). Nothing secret is ever
passed in. A tracker must not raise for a trial it cannot record after the study started
(its store is down): it keeps what it could not record, says so and goes on; only a full disk
where it keeps it is raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tuner.study.outcome import MeasuredRun, TrialResult


class Tracker(Protocol):
    def start_study(self, name: str, tags: dict[str, str], params: dict[str, str],
                    parent_id: str | None = None) -> str: ...

    def log_trial(self, result: TrialResult) -> None: ...

    def catch_up(self, results: list[TrialResult]) -> None: ...

    def finish_study(self, metrics: dict[str, float], artifacts: list[tuple[str, Path]],
                     texts: dict[str, str], tags: dict[str, str] | None = None,
                     starts: Sequence[MeasuredRun] = ()) -> None: ...


class NullTracker:
    def start_study(self, name: str, tags: dict[str, str], params: dict[str, str],
                    parent_id: str | None = None) -> str:
        return parent_id or ""

    def log_trial(self, result: TrialResult) -> None:
        pass

    def catch_up(self, results: list[TrialResult]) -> None:
        pass

    def finish_study(self, metrics: dict[str, float], artifacts: list[tuple[str, Path]],
                     texts: dict[str, str], tags: dict[str, str] | None = None,
                     starts: Sequence[MeasuredRun] = ()) -> None:
        pass
