"""The tracker contract against the NullTracker (a study without tracking): every call
accepted, nothing raised, nothing recorded and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contracts.tracker import (
    RecordedStart,
    RecordedStudy,
    RecordedTrial,
    TrackerCase,
    TrackerContract,
)
from tuner.study import NullTracker, Tracker


class NullCase(TrackerCase):
    records = False

    def tracker(self, run_folder: Path) -> Tracker:
        return NullTracker()

    def written(self) -> list[Path]:
        """Anything in the case's folder but the empty run folders it made."""
        return [p for p in self.folder.rglob("*") if not (p.is_dir() and not any(p.iterdir()))]

    def studies(self, name: str) -> list[str]:
        assert self.written() == []
        return []

    def study(self, study_id: str) -> RecordedStudy | None:
        assert self.written() == []
        return None

    def trials(self, study_id: str) -> list[RecordedTrial]:
        assert self.written() == []
        return []

    def starts(self, study_id: str) -> list[RecordedStart]:
        assert self.written() == []
        return []

    def trial_files(self, study_id: str, number: int) -> set[str]:
        assert self.written() == []
        return set()


@pytest.fixture
def tracker_case(tmp_path: Path) -> NullCase:
    return NullCase(tmp_path / "store")


class TestNullTracker(TrackerContract):
    pass
