"""Delivering kept records to MLflow, each once, whatever happened to earlier attempts.

A record may have been half delivered: a trial's run created, then the server went away before
the run was finished; the study's end logged, then the answer lost. A trial's run is found by
its tags (its number under the study's parent run): a finished one means the trial is there
already; an unfinished one is the debris of an attempt that broke off, deleted before the
trial is logged again. The study's end carries the time it was first kept, so its metrics are
logged only where MLflow does not have that value at that time; its files land on the same
paths again. Nothing is logged twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import httpx

from tuner.study import TrialResult
from tuner.tracking.outbox import StudyEnd

if TYPE_CHECKING:  # MLflow is imported where it is used: 1-2 s, which tune's other paths skip
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

K = TypeVar("K")
FINISHED_STATES = ("FINISHED", "FAILED", "KILLED")
HEALTH_TIMEOUT_S = 3.0
CLIENT_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                  "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}
"""MLflow's HTTP client retries a failed call for about four minutes by default (seven
retries, growing pauses): a study would stand still that long, at every trial, while its
tracking server is down or restarting. A tracker with an outbox keeps what MLflow did not take
instead, so its client gives up within seconds (MLflow reads these variables at each call; a
user's own settings of them are kept)."""


def bound_client_retries() -> None:
    for key, value in CLIENT_RETRIES.items():
        os.environ.setdefault(key, value)


def reachable(uri: str, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether a tracking server answers at all (a local store always does): asked before
    MLflow's client is, whose retries would hold the study for minutes."""
    if not uri.startswith(("http://", "https://")):
        return True
    try:
        return httpx.get(uri.rstrip("/") + "/health", timeout=timeout_s).status_code < 500
    except httpx.HTTPError:
        return False


def logged_runs(client: MlflowClient, experiment_id: str, parent_id: str, role: str,
                key: Callable[[dict[str, str]], K | None]) -> dict[K, list[Run]]:
    """The runs of ``role`` (``tuner.role``) under the study's parent, by ``key`` of their
    tags (a run whose key is None is left out)."""
    found: dict[K, list[Run]] = {}
    token: str | None = None
    query = f"tags.`tuner.role` = '{role}' and tags.`mlflow.parentRunId` = '{parent_id}'"
    while True:
        page = client.search_runs([experiment_id], filter_string=query, max_results=1000,
                                  page_token=token)
        for run in page:
            k = key(run.data.tags)
            if k is not None:
                found.setdefault(k, []).append(run)
        token = page.token
        if not token:
            return found


def logged_trials(client: MlflowClient, experiment_id: str, parent_id: str
                  ) -> dict[int, list[Run]]:
    """The trial runs under the study's parent, by trial number."""
    def number(tags: dict[str, str]) -> int | None:
        text = tags.get("tuner.trial", "")
        return int(text) if text.isdigit() else None
    return logged_runs(client, experiment_id, parent_id, "trial", number)


def deliver_once(client: MlflowClient, logged: list[Run], record: Callable[[], None]) -> bool:
    """Call ``record`` unless a finished run of what it logs is in ``logged``; unfinished ones
    (attempts that broke off) are deleted first. True when it was logged now."""
    if any(run.info.status in FINISHED_STATES for run in logged):
        return False
    for run in logged:
        client.delete_run(run.info.run_id)
    record()
    return True


def deliver_trial(client: MlflowClient, result: TrialResult, logged: list[Run],
                  record: Callable[[TrialResult], None]) -> bool:
    """Log ``result`` with ``record`` once (:func:`deliver_once`)."""
    return deliver_once(client, logged, lambda: record(result))


def deliver_end(client: MlflowClient, parent_id: str, end: StudyEnd) -> None:
    """The study's end on its parent run: metrics MLflow does not have yet (at that time),
    files, texts, and the run finished."""
    from mlflow.entities import Metric

    todo = []
    for key, value in end.metrics.items():
        history = client.get_metric_history(parent_id, key)
        if not any(m.timestamp == end.timestamp_ms and m.value == value for m in history):
            todo.append(Metric(key, float(value), end.timestamp_ms, 0))
    if todo:
        client.log_batch(parent_id, metrics=todo)
    for folder, path in end.artifacts:
        if Path(path).is_file():
            client.log_artifact(parent_id, path, folder or None)
    for name, text in end.texts.items():
        client.log_text(parent_id, text, name)
    for key, tag in end.tags.items():
        client.set_tag(parent_id, key, tag)
    client.set_terminated(parent_id, "FINISHED")
