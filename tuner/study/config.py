"""A study's spec (what defines it on every host) and its run config (``tune --engine ...
--workload ...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from tuner.core import ConfigError, StrictModel
from tuner.study.run_folder import RunFolder
from tuner.study.samplers import DEFAULT_SAMPLER, SAMPLERS, check_runnable


class Baseline(StrictModel):
    """The user's current configuration (``tune --baseline FILE``): measured like the
    defaults, re-measured beside them, and every verdict given against it too."""

    name: str = Field(description="what every output calls it (the file's stem)")
    knobs: dict[str, Any] = Field(description="the knobs it sets; the others are the engine's "
                                  "defaults")


class StudySpec(StrictModel):
    """What defines a study, the same on every host that runs it: the engine and model, the
    budget, the search (sampler, seed, intensification, configurations to try first), the
    re-measurement and the heartbeat. :class:`StudyConfig` adds what one run of ``tune`` is
    given besides (files, output folder, launcher, storage);
    :class:`~tuner.study.record.StudyRecord` adds what the storage keeps (the files' text and
    where the study came from). Each field is declared here once."""

    engine: str
    model: str = Field(description="model folder or Hugging Face id the engine serves")
    served_name: str | None = Field(default=None, description="default: the workload's model")
    trials: int = Field(default=20, ge=1, le=10_000, description="finished trials to reach")
    time_budget_s: float | None = Field(default=None, gt=0)
    budget_usd: float | None = Field(default=None, gt=0, description="no new trial starts once "
                                     "the study's finished trials spent this on accelerators")
    seed: int = Field(default=0, ge=0)
    intensify: bool = Field(default=False, description="measure a trial that beats the "
                            "incumbent again on a fresh start before it can lead")
    sampler: str = Field(default=DEFAULT_SAMPLER, description="the search's sampler: "
                         + ", ".join(SAMPLERS))
    remeasure_top: int = Field(default=2, ge=0, le=20)
    remeasure_repeats: int = Field(default=2, ge=1, le=20)
    race_repeats: int | None = Field(default=None, ge=1, le=50, description=(
        "race: after remeasure_repeats, add a fresh start of the defaults and of each "
        "candidate not yet decided against them, one repeat at a time, up to this many "
        "(None: no race)"))
    resolution: float | None = Field(default=None, gt=0, lt=0.5, description="the smallest "
                                     "relative difference the capacity search and the verdict "
                                     "resolve; default: the workload's capacity.resolution")
    enqueue: list[dict[str, Any]] = Field(default_factory=list,
                                          description="configurations to try first")
    baseline: Baseline | None = Field(default=None, description=(
        "the user's current configuration, measured and re-measured beside the defaults"))
    device: Literal["auto", "cpu", "gpu"] = "auto"
    startup_timeout_s: float | None = Field(default=None, gt=0)
    workers: int | None = Field(default=None, ge=1, le=64, description="load-generator "
                                "processes; default: as the planned token rate needs")
    heartbeat_s: int = Field(default=30, ge=1, le=3600, description="seconds between a "
                             "running trial's heartbeats in the storage; a trial silent for "
                             "GRACE_BEATS of them is failed and retried by another worker")


    @field_validator("race_repeats")
    @classmethod
    def _race_after_repeats(cls, race: int | None, info: ValidationInfo) -> int | None:
        repeats = info.data.get("remeasure_repeats")
        if race is not None and repeats is not None and race <= repeats:
            raise ValueError(f"must be more than the re-measurement's repeats ({repeats}): "
                             "the race adds starts after them; raise it or leave it out")
        return race


SPEC_FIELDS = frozenset(StudySpec.model_fields)
"""The names of a study's defining fields (a spec's, in a config or a record)."""


class StudyConfig(StudySpec):
    """The run config of one ``tune`` (or ``tune worker``): the study's spec, and this run's
    files, output folder, launcher, storage and tracking."""

    workload: Path
    search_space: Path | None = None
    launcher: Literal["process", "docker"] = "process"
    image: str | None = Field(default=None, description="container image (docker); overrides "
                              "the engine spec's image and tag")
    image_tag: str | None = None
    network: Literal["host", "publish"] = "host"
    study_name: str | None = None
    storage: str | None = Field(default=None, description="Optuna storage URL; default: SQLite "
                                "in the output folder")
    tracking_uri: str | None = None
    out_dir: Path = Path("tune-runs")
    parallel: int = Field(default=1, ge=1, le=64, description="trials at once (GPU hosts: each "
                          "gets its own devices)")

    def spec(self) -> dict[str, Any]:
        """The study's spec fields and their values."""
        return self.model_dump(include=set(SPEC_FIELDS))

    @field_validator("sampler")
    @classmethod
    def _runnable_sampler(cls, value: str) -> str:
        try:
            return check_runnable(value)
        except ConfigError as exc:  # told as this field's error
            raise ValueError(str(exc)) from None

    @property
    def name(self) -> str:
        return self.study_name or f"{self.engine}-{self.workload.stem}"

    @property
    def run_dir(self) -> Path:
        return self.out_dir / self.name

    @property
    def folder(self) -> RunFolder:
        """The study's folder, whose paths :class:`RunFolder` alone knows."""
        return RunFolder(self.run_dir)

    @property
    def storage_url(self) -> str:
        return self.storage or f"sqlite:///{self.folder.study_db.resolve()}"

    @property
    def tracking(self) -> str:
        return self.tracking_uri or f"sqlite:///{self.folder.mlflow_db.resolve()}"
