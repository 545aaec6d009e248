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

from pydantic import Field

from tuner import __version__
from tuner.core.errors import ConfigError
from tuner.core.settings import without_password
from tuner.core.validation import StrictModel, validate
from tuner.study.config import StudyConfig
from tuner.study.space import space_file

RECORD_ATTR = "tuner.study"
"""The study's user attribute that holds the record (a JSON object)."""


class StudyRecord(StrictModel):
    tuner_version: str
    engine: str
    model: str
    served_name: str | None = None
    workload_name: str = Field(description="the workload file's stem (names the study)")
    workload_yaml: str
    search_space_yaml: str
    trials: int = Field(ge=1)
    time_budget_s: float | None = None
    budget_usd: float | None = None
    created_at: float = Field(description="Unix time the study was created")
    sampler: str
    seed: int
    intensify: bool = False
    remeasure_top: int = 0
    remeasure_repeats: int = 1
    enqueue: list[dict[str, Any]] = Field(default_factory=list)
    device: str = "auto"
    startup_timeout_s: float | None = None
    workers: int | None = None
    heartbeat_s: int = Field(ge=1)
    tracking_uri: str
    mlflow_parent_run_id: str | None = None

    @property
    def deadline(self) -> float | None:
        """Unix time after which no trial of the study starts (on any host)."""
        return None if self.time_budget_s is None else self.created_at + self.time_budget_s


def record_of(cfg: StudyConfig, parent_run_id: str | None,
              now: float | None = None) -> StudyRecord:
    """The record of a study about to be created from ``cfg``."""
    return StudyRecord(
        tuner_version=__version__, engine=cfg.engine, model=cfg.model,
        served_name=cfg.served_name, workload_name=cfg.workload.stem,
        workload_yaml=cfg.workload.read_text(),
        search_space_yaml=space_file(cfg.search_space or cfg.engine).read_text(),
        trials=cfg.trials, time_budget_s=cfg.time_budget_s, budget_usd=cfg.budget_usd,
        created_at=time.time() if now is None else now, sampler=cfg.sampler, seed=cfg.seed,
        intensify=cfg.intensify, remeasure_top=cfg.remeasure_top,
        remeasure_repeats=cfg.remeasure_repeats, enqueue=cfg.enqueue, device=cfg.device,
        startup_timeout_s=cfg.startup_timeout_s, workers=cfg.workers,
        heartbeat_s=cfg.heartbeat_s, tracking_uri=without_password(cfg.tracking),
        mlflow_parent_run_id=parent_run_id)


def config_from(record: StudyRecord, *, name: str, storage: str, out_dir: Path,
                launcher: str = "process", parallel: int = 1,
                tracking_uri: str | None = None, **host: Any) -> StudyConfig:
    """A worker's config: the study's settings from ``record``, the host's own from its
    options (``host``: launcher details, load-generator workers; None keeps the study's). The
    workload and the search space are written to ``<out>/<study>/shared/``
    (a workload naming other files needs them at the same absolute path on every host)."""
    folder = out_dir / name / "shared"
    folder.mkdir(parents=True, exist_ok=True)
    workload = folder / f"{record.workload_name}.yaml"
    workload.write_text(record.workload_yaml)
    space = folder / "search_space.yaml"
    space.write_text(record.search_space_yaml)
    data: dict[str, Any] = dict(
        engine=record.engine, workload=workload, model=record.model,
        served_name=record.served_name, search_space=space, trials=record.trials,
        time_budget_s=record.time_budget_s, budget_usd=record.budget_usd, launcher=launcher,
        study_name=name,
        storage=storage, tracking_uri=tracking_uri or record.tracking_uri, out_dir=out_dir,
        seed=record.seed, intensify=record.intensify, sampler=record.sampler,
        remeasure_top=record.remeasure_top, remeasure_repeats=record.remeasure_repeats,
        enqueue=record.enqueue, device=record.device, parallel=parallel,
        startup_timeout_s=record.startup_timeout_s, workers=record.workers,
        heartbeat_s=record.heartbeat_s)
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
