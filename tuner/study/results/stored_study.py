"""A shared study read back from its Optuna storage alone (``--storage URL --study NAME``), on
a machine that ran none of its trials: what ``tune report`` and ``tune export`` read when there
is no run folder.

The storage keeps the study's record (engine, model, workload, search space) and each finished
trial's result (all of it but the capacity search's steps and the log's tail). A trial whose
worker died is failed by the heartbeat reaper and queued again under a new number: it is shown
once, as interrupted, naming the worker and the trial that retried it. The database is opened
for reading only: nothing is created in a database that is not a study's, and an unreachable
one, a missing study or a database that is not a tuner study is one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from tuner.core import ConfigError
from tuner.study.coordination import (
    EXCESS,
    WORKER,
    driver_url,
    shown,
    sqlite_file,
    stored_result,
)
from tuner.study.outcome import TrialResult
from tuner.study.record import RECORD_ATTR, StudyRecord, parse_record
from tuner.study.results.pareto import TradeOff
from tuner.study.results.study_folder import StudyFolder

OPTUNA_TABLES = {"studies", "trials", "version_info"}
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class StoredStudy:
    """The study's record and its trials as the storage has them."""

    name: str
    url: str
    record: StudyRecord
    trials: list[TrialResult]
    running: int = 0
    waiting: int = 0
    lost: list[int] = field(default_factory=list)
    """Trials whose worker died (failed by the heartbeat): shown as interrupted."""

    @property
    def served_name(self) -> str:
        if self.record.served_name:
            return self.record.served_name
        workload = yaml.safe_load(self.record.workload_yaml) or {}
        return str(workload.get("model") or self.record.model)

    def folder(self, path: Path, *, host: dict[str, Any] | None = None,
               summary: dict[str, Any] | None = None) -> StudyFolder:
        """The study as a :class:`StudyFolder` written at ``path``: the storage's side, with
        what the tracking store adds (``host``: the hardware and image the study ran on;
        ``summary``: its end, with the winner and every worker's Pareto front)."""
        config = {"engine": self.record.engine, "model": self.record.model,
                  "study_name": self.name, "served_name": self.served_name,
                  "device": self.record.device, "workload": self.record.workload_name,
                  "storage": shown(self.url)}
        kept = [TradeOff.model_validate(p) for p in (summary or {}).get("pareto", [])]
        return StudyFolder(path=path, config=config,
                           host={"served_name": self.served_name, **(host or {})},
                           trials=self.trials, kept_front=kept, summary=summary)


def open_for_reading(url: str) -> BaseStorage:
    """The Optuna storage at ``url``, opened without creating anything in it."""
    database = sqlite_file(url)
    if database is not None and not database.is_file():
        raise ConfigError(f"--storage {url}: no such file {database}; give the study's "
                          "database (tune-runs/<study>/study.db) or its PostgreSQL URL")
    try:
        backend = make_url(driver_url(url)).get_backend_name()
        engine = create_engine(driver_url(url), connect_args=(
            {"connect_timeout": CONNECT_TIMEOUT_S} if backend == "postgresql" else {}))
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise ConfigError(f"--storage {shown(url)}: not a database URL this tuner can open "
                          f"({_first_line(exc)}); give e.g. postgresql://user@host:5432/db "
                          "or sqlite:///tune-runs/<study>/study.db") from None
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc  # the driver's own words
        raise ConfigError(f"--storage {shown(url)}: cannot reach it ({_first_line(cause)}); "
                          "check the URL, the credentials and that the database is up"
                          ) from None
    finally:
        engine.dispose()
    if not tables >= OPTUNA_TABLES:
        raise ConfigError(f"--storage {shown(url)}: not a tuner study database (it has no "
                          "Optuna tables); give the URL the study's tune --storage used")
    return RDBStorage(driver_url(url), skip_table_creation=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


def read_stored_study(name: str, url: str) -> StoredStudy:
    """Study ``name`` as the storage at ``url`` has it."""
    storage = open_for_reading(url)
    studies = {s.study_name: s for s in storage.get_all_studies()}
    ours = sorted(n for n, s in studies.items() if RECORD_ATTR in s.user_attrs)
    if name not in studies:
        raise ConfigError(f"--study {name}: no such study in {shown(url)}; the tuner studies "
                          f"there: {', '.join(ours) or 'none'}")
    record = parse_record(studies[name].user_attrs)
    if record is None:
        raise ConfigError(f"--study {name}: not a tuner study (it has no stored record); the "
                          f"tuner studies in {shown(url)}: {', '.join(ours) or 'none'}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=name, storage=storage)
    frozen = study.get_trials(deepcopy=False)
    retried_as = {n: t.number for t in frozen for n in t.system_attrs.get("retry_history", [])}
    trials: list[TrialResult] = []
    lost: list[int] = []
    for t in frozen:
        result = stored_result(t)
        if result is not None:
            trials.append(result)
        elif t.state == TrialState.FAIL and not t.user_attrs.get(EXCESS):
            # (a trial given back past the budget never ran: not a lost one)
            lost.append(t.number)
            trials.append(_interrupted(t, retried_as.get(t.number)))
    return StoredStudy(name=name, url=url, record=record, trials=trials, lost=lost,
                       running=sum(t.state == TrialState.RUNNING for t in frozen),
                       waiting=sum(t.state == TrialState.WAITING for t in frozen))


def _interrupted(t: FrozenTrial, retry: int | None) -> TrialResult:
    """A trial failed without a result: its worker stopped beating (killed, or its host lost)."""
    worker = t.user_attrs.get(WORKER, "its worker")
    then = f"; retried as trial {retry}" if retry is not None else "; not retried"
    config = {**t.params, **t.user_attrs.get("enqueued", {})}
    return TrialResult(number=t.number, config=config, defaults=bool(t.user_attrs.get("defaults")),
                       outcome="interrupted",
                       detail=f"{worker} stopped before it finished (no heartbeat){then}")
