"""``tune status --study NAME --storage URL``: a study's state from anywhere, running nothing."""

from __future__ import annotations

from rich.console import Console

from tuner.study import StudyStatus, study_status
from tuner.study.coordination import read_record, storage_for
from tuner.study.repeats import status_of_round


def status_command(name: str, storage: str, console: Console) -> StudyStatus:
    study, record = read_record(name, storage)
    remeasure = status_of_round(storage_for(storage, None), name, record)
    status = study_status(name, study, record, remeasure)
    for line in status.lines():
        console.print(line, highlight=False, soft_wrap=True)
    return status
