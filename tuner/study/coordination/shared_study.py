"""The study as a shared object in its Optuna storage: created once, joined by any host.

Creation is decided by the storage itself: the study name is unique there, so of several
processes that create it at once exactly one succeeds (the creator); the others join. The
creator writes the study's record (:mod:`tuner.study.record`), enqueues the defaults
trial and the configurations to try first, and only then marks the study ready; a joiner
waits for that mark. Liveness is Optuna's heartbeat: a running trial beats every
``heartbeat_s`` seconds (the database's clock decides), a trial silent for ``GRACE_BEATS``
beats is failed by whichever worker looks next and put back in the queue once
(:class:`optuna.storages.RetryHeartbeatStaleTrialCallback`); a live worker's trial is never
touched.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.exceptions import DuplicatedStudyError, UpdateFinishedTrialError
from optuna.storages import (
    BaseStorage,
    RDBStorage,
    RetryHeartbeatStaleTrialCallback,
)
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tuner.core import ConfigError, StudyError
from tuner.study.coordination.ledger import BASELINE, COPY_OF, EXCESS, from_queue
from tuner.study.coordination.optuna_internals import BaseHeartbeat, CachedStorage
from tuner.study.coordination.sqlite_file import claims_lock, sqlite_file
from tuner.study.coordination.storage_outage import GRACE_BEATS, RetryingStorage
from tuner.study.record import RECORD_ATTR, StudyRecord, parse_record
from tuner.study.samplers import make_sampler

log = logging.getLogger(__name__)

READY_ATTR = "tuner.ready"
"""Set by the creator once the record is written and the first trials are enqueued."""
READY_WAIT_S = 60.0


def driver_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 (the driver this package installs); SQLAlchemy's
    default for it would be psycopg2. A URL naming its driver is left as it is."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url.removeprefix(scheme)
    return url


def shown(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def storage_for(url: str, heartbeat_s: int | None) -> BaseStorage:
    """The study's RDB storage, with heartbeats when ``heartbeat_s`` is given, riding out an
    outage of its database (:mod:`tuner.study.coordination.storage_outage`). Tables are
    created on first use; two processes doing that at once may collide, so it is tried again."""
    kwargs: dict[str, Any] = {}
    for attempt in range(3):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" since Optuna 2.9
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                if heartbeat_s is not None:
                    kwargs = {"heartbeat_interval": heartbeat_s,
                              "grace_period": GRACE_BEATS * heartbeat_s,
                              "heartbeat_stale_trial_callback":
                                  RetryHeartbeatStaleTrialCallback(max_retry=1)}
                rdb = RDBStorage(driver_url(url), engine_kwargs={"pool_pre_ping": True},
                                 **kwargs)
                return RetryingStorage(CachedStorage(rdb), shown(url),
                                       retry=not url.startswith("sqlite"),
                                       claims=claims_lock(url))
        except Exception as exc:  # SQLAlchemy and driver errors have no common base we name
            if attempt == 2:
                raise StudyError(f"cannot open study storage {shown(url)}: {exc}") from exc
            time.sleep(1.0 + attempt)
    raise AssertionError("unreachable")


def worker_id() -> str:
    """Who runs a trial: ``hostname:pid`` (stored on each trial it takes)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def joiner_seed(seed: int) -> int:
    """A joining process's sampler seed: the study's seed mixed with its worker id, so that
    workers do not propose the same random configurations in step."""
    return zlib.crc32(f"{seed}:{worker_id()}".encode())


def claim(name: str, storage: BaseStorage, sampler: str, seed: int, trials: int,
          *, create: bool) -> tuple[optuna.Study, bool]:
    """Open study ``name``; create it when ``create`` and it does not exist. True when this
    process created it (and must publish it); the creator's sampler has the study's seed."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if create:
        try:
            return optuna.create_study(
                study_name=name, storage=storage, direction="minimize",
                sampler=make_sampler(sampler, seed=seed, trials=trials)), True
        except DuplicatedStudyError:
            pass
        except Exception as exc:  # storage errors
            raise StudyError(f"cannot create study {name!r}: {exc}") from exc
    made = make_sampler(sampler, seed=joiner_seed(seed), trials=trials)
    try:
        return optuna.load_study(study_name=name, storage=storage, sampler=made), False
    except KeyError:
        raise ConfigError(f"--study {name}: no such study in this storage; start it with "
                          "tune --engine ... --storage URL (or check the name)") from None
    except Exception as exc:
        raise StudyError(f"cannot load study {name!r}: {exc}") from exc


@dataclass(frozen=True)
class QueuedBaseline:
    """The user's current configuration as the study queues it: its name and ``params``, the
    points of the search space Optuna is told (its knobs over the engine defaults)."""

    name: str
    params: dict[str, object]


def enqueue_baseline(study: optuna.Study, baseline: QueuedBaseline) -> None:
    """Queue the baseline's trial (never skipped as a duplicate: it may tell Optuna the same
    points as the defaults and still set knobs outside the space)."""
    study.enqueue_trial(baseline.params, user_attrs={BASELINE: baseline.name})


def publish(study: optuna.Study, record: StudyRecord, defaults: dict[str, object],
            enqueue: list[dict[str, object]], baseline: QueuedBaseline | None = None) -> None:
    """The creator's part: the record, the defaults trial, the baseline's and the enqueued
    configurations, then the ready mark. Done once per study."""
    study.set_user_attr(RECORD_ATTR, record.model_dump(mode="json"))
    study.enqueue_trial(defaults, user_attrs={"defaults": True})
    if baseline is not None:
        enqueue_baseline(study, baseline)
    for config in enqueue:
        study.enqueue_trial(config, user_attrs={"enqueued": config}, skip_if_exists=True)
    study.set_user_attr(READY_ATTR, True)


def adopt(study: optuna.Study, record: StudyRecord, defaults: dict[str, object],
          enqueue: list[dict[str, object]], baseline: QueuedBaseline | None = None) -> None:
    """A study an earlier tuner made (no record): it had one process, so its RUNNING trials
    are leftovers of a killed run; they are failed, then what is missing is enqueued."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study.tell(t.number, state=TrialState.FAIL)
    trials = study.get_trials(deepcopy=False)
    if not _kept(trials, "defaults"):
        study.enqueue_trial(defaults, user_attrs={"defaults": True})
    if baseline is not None and not _kept(trials, BASELINE):
        enqueue_baseline(study, baseline)
    study.set_user_attr(RECORD_ATTR, record.model_dump(mode="json"))
    for config in enqueue:
        study.enqueue_trial(config, user_attrs={"enqueued": config}, skip_if_exists=True)
    study.set_user_attr(READY_ATTR, True)


def _kept(trials: list[FrozenTrial], attr: str) -> bool:
    """Some trial marked ``attr`` finished or waits in the queue."""
    return any(t.user_attrs.get(attr) and t.state in (TrialState.COMPLETE, TrialState.WAITING)
               for t in trials)


def stored_record(study: optuna.Study) -> StudyRecord | None:
    return parse_record(study.user_attrs) if study.user_attrs.get(READY_ATTR) else None


def wait_record(study: optuna.Study, timeout_s: float = READY_WAIT_S,
                poll_s: float = 0.5) -> StudyRecord | None:
    """The record once the creator has published it; None when the study is not tune's (it
    has trials and no record) or nothing came within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            record = stored_record(study)
            if record is not None:
                return record
            if study.user_attrs.get(RECORD_ATTR) is None and study.get_trials(deepcopy=False):
                return None  # trials but no record: made by something else (an older tuner)
        except KeyError:
            raise StudyError(f"study {study.study_name} was removed while it was being "
                             "created (its creator failed: see its output)") from None
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)


class Heartbeat:
    """Beats for one running trial until stopped (Optuna's ``optimize`` does this itself;
    ask-and-tell has to). A beat that fails is logged and tried again next time: a trial whose
    beats stop for good is failed by another worker, never by this one."""

    def __init__(self, study: optuna.Study, trial: optuna.Trial, interval_s: float) -> None:
        # Optuna names a trial in its storage by its private id; there is no public accessor.
        self.storage, self.trial_id = study._storage, trial._trial_id
        self.interval_s = interval_s
        self.failing = False
        self.stop_event = threading.Event()
        self.beat()  # at once: a trial that never beat is never seen as stale
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{trial.number}",
                                       daemon=True)
        self.thread.start()

    def beat(self) -> None:
        if isinstance(self.storage, BaseHeartbeat):
            try:
                self.storage.record_heartbeat(self.trial_id)
            except Exception as exc:  # the database is away for a moment; the next beat may do
                if not self.failing:  # said once per streak, not every beat of an outage
                    log.warning("heartbeat of trial id %s failed (%s); beating on",
                                self.trial_id, str(exc).splitlines()[0][:200])
                self.failing = True
            else:
                self.failing = False

    def _run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            self.beat()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=10)


@contextmanager
def beating(study: optuna.Study, trial: optuna.Trial, interval_s: float) -> Iterator[None]:
    beat = Heartbeat(study, trial, interval_s)
    try:
        yield
    finally:
        beat.stop()


def fail_stale(study: optuna.Study) -> None:
    """Fail the trials of dead workers (silent past the grace period); the retry callback puts
    each back in the queue once."""
    with warnings.catch_warnings():  # "experimental" since Optuna 2.9
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def requeue(study: optuna.Study, trial: FrozenTrial) -> None:
    """Put an interrupted trial back in the queue (its parameters, its user attributes): the
    interrupt was not the configuration's fault. It keeps Optuna's retry history, so a trial
    that keeps being lost is retried only so often."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        RetryHeartbeatStaleTrialCallback(max_retry=2)(study, trial)


def take_queued(study: optuna.Study, queued: FrozenTrial) -> optuna.Trial | None:
    """Claim a queued trial as Optuna's ``ask`` does (WAITING to RUNNING in one transaction
    of the storage: of several processes, one wins); None when another took it first."""
    # Optuna names a trial in its storage by its private id; there is no public accessor.
    try:
        if study._storage.set_trial_state_values(queued._trial_id, state=TrialState.RUNNING):
            return optuna.Trial(study, queued._trial_id)
    except UpdateFinishedTrialError:
        pass  # taken and finished meanwhile
    return None


def return_to_queue(study: optuna.Study, trial: optuna.Trial) -> None:
    """An interrupted trial is failed and queued again, for any worker to take."""
    try:
        study.tell(trial, state=TrialState.FAIL)
    except UpdateFinishedTrialError:
        return  # failed meanwhile as stale: the heartbeat's retry has queued it
    frozen = next(t for t in study.get_trials(deepcopy=False) if t.number == trial.number)
    requeue(study, frozen)


def give_back(study: optuna.Study, trial: optuna.Trial) -> None:
    """Return a trial asked past the budget (another process took the last start first): it
    is failed, marked ``tuner.excess``, and when it came from the queue (the defaults, an
    enqueued configuration, a retry), a copy goes back to the queue untouched."""
    frozen = next(t for t in study.get_trials(deepcopy=False) if t.number == trial.number)
    trial.set_user_attr(EXCESS, True)
    study.tell(trial, state=TrialState.FAIL)
    if from_queue(frozen):
        study.add_trial(optuna.create_trial(
            state=TrialState.WAITING, params=frozen.params, distributions=frozen.distributions,
            user_attrs={k: v for k, v in frozen.user_attrs.items() if not k.startswith("tuner.")},
            system_attrs={**frozen.system_attrs, COPY_OF: frozen.number}))


def read_record(name: str, url: str) -> tuple[optuna.Study, StudyRecord]:
    """Study ``name`` in the storage at ``url`` and its record, for a process that only joins
    (``tune worker``, ``tune status``); a ConfigError when there is no such study or tune did
    not make it."""
    database = sqlite_file(url)
    if database is not None and not database.is_file():
        raise ConfigError(f"--storage {url}: no such file {database}; give the study's "
                          "database (tune-runs/<study>/study.db) or its PostgreSQL URL")
    study, _ = claim(name, storage_for(url, None), "random", 0, 1, create=False)
    record = wait_record(study)
    if record is None:
        raise ConfigError(f"--study {name}: this study was not made by tune (it has no stored "
                          "configuration); join only studies that tune --engine ... --storage "
                          "URL made")
    return study, record
