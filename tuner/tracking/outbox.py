"""What the tracker has not delivered yet, kept in the run folder until it is.

A tracking server can be down for a while (restarted, its host rebooted) while a study runs
for hours. Every trial and the study's end go into the outbox first (``tracking-pending/`` in
the run folder: one file each, written whole or not at all) and leave it once MLflow has them;
what stays is delivered with the next trial, at the study's end, by the same command run again
or by ``tune report --dir``. ``target.json`` says where it goes: the tracking URI (its password,
if the URI carries one, is not written), the experiment and the study's parent run.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from pydantic import BaseModel, Field

from tuner.core import without_password
from tuner.host import write_atomic
from tuner.study import OutboxFiles, TrialResult
from tuner.study.repeats import MeasuredRun


class Target(BaseModel):
    """Where the outbox's records go."""

    uri: str = Field(description="the tracking URI, without a password")
    experiment_id: str
    parent_id: str


class StudyEnd(BaseModel):
    """What the study's parent run gets at its end (its time fixed when it was first kept, so
    that a delivery made twice is recognised)."""

    metrics: dict[str, float]
    timestamp_ms: int = Field(default_factory=lambda: int(time.time() * 1000))
    artifacts: list[tuple[str, str]] = Field(default_factory=list,
                                             description="(folder in the run, file)")
    texts: dict[str, str] = Field(default_factory=dict, description="file name -> text")
    tags: dict[str, str] = Field(default_factory=dict, description="the run's tags (a "
                                 "comparison's verdict)")
    starts: list[MeasuredRun] = Field(default_factory=list, description="the re-measurement's "
                                      "fresh starts, each a child run")


class Outbox:
    """The pending records of one run folder (its files named by the study's RunFolder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files = OutboxFiles(folder)

    def keep_target(self, uri: str, experiment_id: str, parent_id: str) -> None:
        write_atomic(self.files.target, Target(
            uri=without_password(uri), experiment_id=experiment_id,
            parent_id=parent_id).model_dump_json(indent=2))

    def target(self) -> Target | None:
        path = self.files.target
        return Target.model_validate_json(path.read_text()) if path.is_file() else None

    def keep_trial(self, result: TrialResult) -> None:
        write_atomic(self.files.trial(result.number), result.model_dump_json(indent=2))

    def keep_end(self, end: StudyEnd) -> None:
        write_atomic(self.files.end, end.model_dump_json(indent=2))

    def trials(self) -> list[TrialResult]:
        """The kept trials, by number."""
        found = [TrialResult.model_validate_json(p.read_text()) for p in self.files.trials()]
        return sorted(found, key=lambda r: r.number)

    def end(self) -> StudyEnd | None:
        path = self.files.end
        return StudyEnd.model_validate_json(path.read_text()) if path.is_file() else None

    def delivered_trial(self, number: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.files.trial(number).unlink()

    def delivered_end(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.files.end.unlink()

    def pending(self) -> int:
        """Records not delivered yet."""
        if not self.folder.is_dir():
            return 0
        return len(self.files.trials()) + int(self.files.end.is_file())

    def tidy(self) -> None:
        """Once nothing is pending, the folder goes (its target with it)."""
        if self.pending() == 0 and self.folder.is_dir():
            with contextlib.suppress(FileNotFoundError):
                self.files.target.unlink()
            with contextlib.suppress(OSError):
                self.folder.rmdir()
