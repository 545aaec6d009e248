"""``tune status --study NAME --storage URL``: a study's state from anywhere, running nothing."""

from __future__ import annotations

from rich.console import Console

from tuner.search.shared_study import read_record
from tuner.search.study_status import StudyStatus, study_status


def status_command(name: str, storage: str, console: Console) -> StudyStatus:
    study, record = read_record(name, storage)
    status = study_status(name, study, record)
    for line in status.lines():
        console.print(line, highlight=False, soft_wrap=True)
    return status
