"""What a study stores about itself in its Optuna storage, so that any host can join it.

The record is written once, by the process that creates the study, into the study's user
attributes: the engine, the workload's and the search space's YAML text, the model, the
budget (trials and a wall-clock deadline), the sampler and its seed, the configurations to try
first, the heartbeat and the MLflow tracking URI (without a password it may carry: a worker
gives its own credentials, in its --tracking-uri or as MLflow's MLFLOW_TRACKING_* variables)
with the study's parent run. A worker on
another host rebuilds its :class:`StudyConfig` from it; what stays per host (launcher,
``--parallel``, output folder, GPU pool, engine caches) comes from the worker's own options.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from tuner import __version__
from tuner.core import ConfigError, validate, without_password
from tuner.study.config import SPEC_FIELDS, StudyConfig, StudySpec
from tuner.study.run_folder import RunFolder
from tuner.study.space import space_file

RECORD_ATTR = "tuner.study"
"""The study's user attribute that holds the record (a JSON object)."""
LEGACY_DEFAULTS: dict[str, Any] = {"intensify": False, "remeasure_top": 0,
                                   "remeasure_repeats": 1, "device": "auto"}
"""What a record written before these fields were stored meant by their absence."""


class StudyRecord(StudySpec):
    """The study's spec and where it came from: the tuner, the workload's and the search
    space's text, when it was created, its tracking store and parent run."""

    tuner_version: str
    workload_name: str = Field(description="the workload file's stem (names the study)")
    workload_yaml: str
    search_space_yaml: str
    created_at: float = Field(description="Unix time the study was created")
    tracking_uri: str
    mlflow_parent_run_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _earlier_records(cls, data: Any) -> Any:
        """Records of earlier tuner versions may lack fields added since; they had these."""
        if isinstance(data, dict):
            return {**LEGACY_DEFAULTS, **data}
        return data

    @property
    def deadline(self) -> float | None:
        """Unix time after which no trial of the study starts (on any host)."""
        return None if self.time_budget_s is None else self.created_at + self.time_budget_s


def record_of(cfg: StudyConfig, parent_run_id: str | None,
              now: float | None = None) -> StudyRecord:
    """The record of a study about to be created from ``cfg``."""
    return StudyRecord(
        **cfg.spec(), tuner_version=__version__, workload_name=cfg.workload.stem,
        workload_yaml=cfg.workload.read_text(),
        search_space_yaml=space_file(cfg.search_space or cfg.engine).read_text(),
        created_at=time.time() if now is None else now,
        tracking_uri=without_password(cfg.tracking), mlflow_parent_run_id=parent_run_id)


def config_from(record: StudyRecord, *, name: str, storage: str, out_dir: Path,
                launcher: str = "process", parallel: int = 1,
                tracking_uri: str | None = None, **host: Any) -> StudyConfig:
    """A worker's config: the study's settings from ``record``, the host's own from its
    options (``host``: launcher details, load-generator workers; None keeps the study's). The
    workload and the search space are written to ``<out>/<study>/shared/``
    (a workload naming other files needs them at the same absolute path on every host)."""
    run = RunFolder(out_dir / name)
    run.shared.mkdir(parents=True, exist_ok=True)
    workload = run.shared_workload(record.workload_name)
    workload.write_text(record.workload_yaml)
    space = run.shared_space
    space.write_text(record.search_space_yaml)
    data: dict[str, Any] = dict(
        record.model_dump(include=set(SPEC_FIELDS)), workload=workload, search_space=space,
        launcher=launcher, study_name=name, storage=storage,
        tracking_uri=tracking_uri or record.tracking_uri, out_dir=out_dir, parallel=parallel)
    data.update({k: v for k, v in host.items() if v is not None})
    return validate(StudyConfig, data, "worker options")


def parse_record(attrs: dict[str, Any]) -> StudyRecord | None:
    """The record among a study's user attributes; None when the study has none (not made by
    tune, or its creator has not written it yet)."""
    data = attrs.get(RECORD_ATTR)
    if data is None:
        return None
    try:
        return StudyRecord.model_validate(data)
    except ValueError as exc:
        raise ConfigError(f"the study's stored record is unreadable ({exc.__class__.__name__})"
                          "; it was made by another tuner version: give another --study "
                          "name") from exc
