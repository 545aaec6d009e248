"""Opening a study shared in its storage: create it (once), adopt one an earlier tuner made, or
join it; the tracker's parent run is made by the creator and found by the others."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from tuner.core import ConfigError
from tuner.study.config import StudyConfig
from tuner.study.coordination.shared_study import (
    QueuedBaseline,
    adopt,
    claim,
    joiner_seed,
    publish,
    storage_for,
    wait_record,
)
from tuner.study.record import RECORD_ATTR, StudyRecord, record_of
from tuner.study.samplers import make_sampler

log = logging.getLogger(__name__)

StartTracking = Callable[[str | None], str]
"""Starts the tracker's study record: given the study's stored parent run id (None: make
one), returns the parent run id."""


@dataclass(frozen=True)
class SharedStudy:
    study: optuna.Study
    record: StudyRecord
    created: bool


def _check_same(cfg: StudyConfig, record: StudyRecord) -> None:
    """``tune`` joining an existing study must describe the same study."""
    ours = (cfg.engine, cfg.model, cfg.workload.read_text())
    if ours != (record.engine, record.model, record.workload_yaml):
        raise ConfigError(
            f"--study-name {cfg.name}: the storage holds a study of that name for engine "
            f"{record.engine!r}, model {record.model!r} and workload "
            f"{record.workload_name!r} (as stored); give another --study-name, or join it "
            f"with: tune worker --study {cfg.name} --storage URL")


RERUN_SETTINGS = ("trials", "budget_usd", "remeasure_top", "remeasure_repeats",
                  "race_repeats")


def _settings_of_rerun(cfg: StudyConfig, study: optuna.Study, record: StudyRecord
                       ) -> StudyRecord:
    """``tune`` run again on its study sets the study's trial budget (a larger ``--trials``
    extends a finished study, as it did before studies were shared) and its re-measurement;
    workers read them."""
    update = {k: getattr(cfg, k) for k in RERUN_SETTINGS if getattr(cfg, k) != getattr(record, k)}
    if not update:
        return record
    log.info("study %s: %s (this command's options)", cfg.name,
             ", ".join(f"{k} {getattr(record, k)} -> {v}" for k, v in update.items()))
    updated = record.model_copy(update=update)
    study.set_user_attr(RECORD_ATTR, updated.model_dump(mode="json"))
    return updated


def open_shared(cfg: StudyConfig, defaults: dict[str, object], *, create: bool = True,
                start_tracking: StartTracking | None = None,
                baseline: QueuedBaseline | None = None) -> SharedStudy:
    """Create the study (when ``create``; with ``defaults``, the legal defaults of the space,
    as its first trial, and ``baseline``, the user's current configuration, as its second)
    or join it."""
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    storage = storage_for(cfg.storage_url, cfg.heartbeat_s)
    study, created = claim(cfg.name, storage, cfg.sampler, cfg.seed, cfg.trials,
                           create=create)
    if created:
        try:
            record = record_of(cfg, start_tracking(None) if start_tracking else None)
            publish(study, record, defaults, cfg.enqueue, baseline)
        except BaseException:  # (an unreachable tracking server) no half-made study is left
            optuna.delete_study(study_name=cfg.name, storage=storage)
            raise
        return SharedStudy(study, record, True)
    found = wait_record(study)
    if found is None:
        if not create:
            raise ConfigError(
                f"--study {cfg.name}: this study was not made by tune (it has no stored "
                "configuration); join only studies that tune --engine ... --storage URL made")
        log.info("study %s has no stored configuration (an earlier tuner made it); adopting "
                 "it", cfg.name)
        record = record_of(cfg, start_tracking(None) if start_tracking else None)
        adopt(study, record, defaults, cfg.enqueue, baseline)
        return SharedStudy(study, record, True)
    if create:
        _check_same(cfg, found)
        found = _settings_of_rerun(cfg, study, found)
    if found.heartbeat_s != cfg.heartbeat_s:  # the study's heartbeat is everyone's
        study = optuna.load_study(study_name=cfg.name,
                                  storage=storage_for(cfg.storage_url, found.heartbeat_s))
    study.sampler = make_sampler(found.sampler, seed=joiner_seed(found.seed),
                                 trials=found.trials)
    if start_tracking is not None:
        start_tracking(found.mlflow_parent_run_id)
    return SharedStudy(study, found, False)
