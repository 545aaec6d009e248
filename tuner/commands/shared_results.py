"""A shared study for ``tune report`` and ``tune export`` on a machine that ran none of its
trials: the storage's side (record, every worker's trials) and the tracking server's (the host
it ran on, its summary), as one :class:`StudyFolder` written under ``--out``."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from tuner.study.results import StoredStudy, StudyFolder, read_stored_study
from tuner.tracking import StudyRun, read_study_run


def tracking_of(stored: StoredStudy, tracking: str | None) -> str | None:
    """The tracking store to ask: the one given, else the study's own when it is a server
    (a local store's path is the creator's machine's, not this one's)."""
    if tracking:
        return tracking
    uri = stored.record.tracking_uri
    return uri if uri.startswith(("http://", "https://")) else None


def shared_study(name: str, storage: str, tracking: str | None, out: Path,
                 console: Console) -> StudyFolder:
    stored = read_stored_study(name, storage)
    uri = tracking_of(stored, tracking)
    run = (read_study_run(uri, stored.record.mlflow_parent_run_id) if uri else
           StudyRun(problem="no tracking server given (--tracking URI)"))
    if run.problem is not None:
        console.print(f"note: {run.problem}: the study is shown from its storage alone (no "
                      "re-measured winner; the cheapest trial stands for it)", highlight=False,
                      soft_wrap=True)
    if stored.lost:
        console.print(f"trials whose worker died: {', '.join(map(str, stored.lost))} (shown "
                      "as interrupted)", highlight=False)
    if stored.running or stored.waiting:
        console.print(f"the study is not over: {stored.running} trial(s) running, "
                      f"{stored.waiting} queued", highlight=False)
    path = out / name
    path.mkdir(parents=True, exist_ok=True)
    return stored.folder(path, host=run.host, summary=run.summary)
