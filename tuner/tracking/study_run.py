"""What the tracking store adds to a shared study read from its storage: the study's parent run
keeps the host it ran on (hardware, image, served model name, in its parameters) and, once the
study ended, its ``summary.json`` (the re-measured winner, every worker's Pareto front).

Read-only and bounded: a server that does not answer is told in one line and the caller goes
on with the storage alone (MLflow's client would otherwise retry for minutes).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.core import without_password
from tuner.tracking.delivery import bound_client_retries, reachable


@dataclass(frozen=True)
class StudyRun:
    """The study's parent run, as far as it could be read."""

    host: dict[str, Any] = field(default_factory=dict)
    """``hardware`` (the host's, as recorded), ``image`` (what a Docker launcher ran),
    ``engine_version``."""
    summary: dict[str, Any] | None = None
    """The study's ``summary.json``; None while it runs, or where it could not be read."""
    problem: str | None = None
    """Why nothing (or not everything) was read."""


def read_study_run(uri: str, parent_run_id: str | None) -> StudyRun:
    shown = without_password(uri)
    if parent_run_id is None:
        return StudyRun(problem="the study's record names no MLflow run")
    if not reachable(uri):
        return StudyRun(problem=f"MLflow at {shown} does not answer")
    bound_client_retries()
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    try:
        params = client.get_run(parent_run_id).data.params
    except MlflowException as exc:
        return StudyRun(problem=f"MLflow at {shown} has no run {parent_run_id} "
                                f"({exc.error_code})")
    host: dict[str, Any] = {"engine_version": params.get("engine_version")}
    if "hardware_json" in params:
        host["hardware"] = json.loads(params["hardware_json"])
    image = params.get("image", "none")
    if image != "none":
        host["image"] = image.split(" (")[0]  # "<ref> (<digest>)"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = Path(client.download_artifacts(parent_run_id, "summary.json", tmp))
        except (MlflowException, OSError):
            return StudyRun(host=host, problem="the study has not ended (MLflow has no "
                                                "summary.json for it yet)")
        return StudyRun(host=host, summary=json.loads(path.read_text()))
