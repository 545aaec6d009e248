"""The study's storage riding out an outage: a database restarted, a network that blinked.

A study runs for hours against a PostgreSQL server that may be restarted under it. An operation
on the storage that fails because the database cannot be reached (SQLAlchemy's
``OperationalError``, ``InterfaceError`` or a dropped connection, raw or wrapped in Optuna's
``StorageInternalError``) is tried again, after a pause that grows to ``MAX_PAUSE_S``, until it
succeeds or ``outage_s`` has passed. The outage is said once when it begins and once when it
ends. A trial that finishes meanwhile waits to be told and is told once the database is back:
nothing is lost. Past ``outage_s`` the study stops with one line (its finished trials are in the
storage; the same command run again once it is back resumes it). A SQLite file on this host is
not retried: it has no outage to wait out.

A write whose commit reached the database just before the connection dropped is applied by its
first attempt; its retry could apply it twice. The write that matters, a trial's end, is
recognised on its retry (the trial already has the state it was to get) and taken as done.

A trial given back to the queue because its run was interrupted is tried once too
(:func:`without_waiting`): an interrupt must stop the study now, not after the outage; a trial
that could not be given back is failed by its missed heartbeats and run again.

A heartbeat is tried once (the next beat comes soon), and after an outage no trial is failed as
stale until every worker has had the grace period to beat again (:meth:`RetryingStorage.settled`):
their beats failed during the outage through no fault of theirs. A trial that never beat is
failed as stale too, 20 s after its start (:mod:`tuner.study.coordination.silent_trials`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from optuna.distributions import BaseDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import exc as sa

from tuner.core import StudyError
from tuner.study.coordination.optuna_internals import BaseHeartbeat, FrozenStudy
from tuner.study.coordination.silent_trials import never_beat
from tuner.study.coordination.sqlite_file import one_claim_at_a_time

log = logging.getLogger(__name__)

T = TypeVar("T")
OUTAGE_S = 600.0
"""How long the study waits for its database to come back before it stops."""
GRACE_BEATS = 4
"""Heartbeats a running trial may miss before another worker fails and retries it."""
FIRST_PAUSE_S = 0.5
MAX_PAUSE_S = 10.0


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the database could not be reached."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa.OperationalError | sa.InterfaceError | sa.DisconnectionError):
            return True
        if isinstance(current, sa.DBAPIError) and current.connection_invalidated:
            return True
        current = current.__cause__ or current.__context__
    return False


def first_line(exc: BaseException) -> str:
    """What the database said, in one line (the driver's message, not SQLAlchemy's notes)."""
    cause = exc
    while cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(getattr(cause, "orig", None) or cause).strip()
    return (text.splitlines() or [type(cause).__name__])[0][:200]


class RetryingStorage(BaseStorage, BaseHeartbeat):
    """``backend`` (Optuna's RDB storage behind its cache), every call of which waits out an
    outage of the database (``retry``; off for SQLite). With ``claims`` (a SQLite file's lock,
    :mod:`tuner.study.coordination.sqlite_file`), claims of queued trials are made one at a
    time."""

    def __init__(self, backend: BaseStorage, label: str, *, retry: bool = True,
                 claims: Path | None = None, outage_s: float = OUTAGE_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.backend = backend
        self.label = label
        self.retry = retry
        self.claims = claims
        self.outage_s = outage_s
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._back_at: float | None = None
        self._once = threading.local()  # this thread's calls are tried once (without_waiting)

    def __getstate__(self) -> dict[str, Any]:
        """A storage travels (pickled, as Optuna's own do) without its lock and its thread's
        state; a copy starts with neither an outage nor a call tried once."""
        state = self.__dict__.copy()
        del state["_lock"], state["_once"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._once = threading.local()

    # ------------------------------------------------------------------ the retry itself

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        began: float | None = None
        pause = FIRST_PAUSE_S
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not self.retry or getattr(self._once, "on", False) or not unreachable(exc):
                    raise
                now = self._clock()
                began = now if began is None else began
                self._went_away(exc, now)
                if now - began >= self.outage_s:
                    raise StudyError(
                        f"study storage {self.label} unreachable for {now - began:.0f}s "
                        f"({first_line(exc)}); the finished trials are kept there; run the same "
                        "command again once it is back") from exc
                self._sleep(pause)
                pause = min(MAX_PAUSE_S, pause * 2)
                continue
            if began is not None:
                self._came_back()
            return result

    @contextmanager
    def tried_once(self) -> Iterator[None]:
        """This thread's calls within are tried once, not retried through an outage."""
        before = getattr(self._once, "on", False)
        self._once.on = True
        try:
            yield
        finally:
            self._once.on = before

    def _went_away(self, exc: BaseException, now: float) -> None:
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = now
        log.warning("study storage %s unreachable (%s); the study waits for it, up to %.0fs",
                    self.label, first_line(exc), self.outage_s)

    def _came_back(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            now = self._clock()
            down, self._down_since, self._back_at = now - self._down_since, None, now
        log.warning("study storage %s is back after %.0fs; the study goes on", self.label, down)

    def settled(self) -> bool:
        """No outage now, and none ended within the heartbeat's grace period: a trial silent
        past it now is really its worker's."""
        interval = self.get_heartbeat_interval()
        with self._lock:
            if self._down_since is not None:
                return False
            if self._back_at is None or interval is None:
                return True
            return self._clock() - self._back_at >= GRACE_BEATS * interval

    def backend_heartbeat(self) -> BaseHeartbeat:
        assert isinstance(self.backend, BaseHeartbeat)
        return self.backend

    # ------------------------------------------------------------------ studies

    def create_new_study(self, directions: Sequence[StudyDirection],
                         study_name: str | None = None) -> int:
        return self._call(self.backend.create_new_study, directions, study_name)

    def delete_study(self, study_id: int) -> None:
        self._call(self.backend.delete_study, study_id)

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._call(self.backend.set_study_user_attr, study_id, key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._call(self.backend.set_study_system_attr, study_id, key, value)

    def get_study_id_from_name(self, study_name: str) -> int:
        return self._call(self.backend.get_study_id_from_name, study_name)

    def get_study_name_from_id(self, study_id: int) -> str:
        return self._call(self.backend.get_study_name_from_id, study_id)

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        return self._call(self.backend.get_study_directions, study_id)

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        return self._call(self.backend.get_study_user_attrs, study_id)

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        return self._call(self.backend.get_study_system_attrs, study_id)

    def get_all_studies(self) -> list[FrozenStudy]:
        return self._call(self.backend.get_all_studies)

    # ------------------------------------------------------------------ trials

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        return self._call(self.backend.create_new_trial, study_id, template_trial)

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float,
                        distribution: BaseDistribution) -> None:
        self._call(self.backend.set_trial_param, trial_id, param_name, param_value_internal,
                   distribution)

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        return self._call(self.backend.get_trial_id_from_study_id_trial_number, study_id,
                          trial_number)

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values: Sequence[float] | None = None) -> bool:
        attempts = 0

        def once() -> bool:
            nonlocal attempts
            attempts += 1
            try:
                return self.backend.set_trial_state_values(trial_id, state, values)
            except UpdateFinishedTrialError:
                # A retry after a lost connection: did the first attempt's commit land?
                if attempts > 1 and self.backend.get_trial(trial_id).state == state:
                    return True
                raise
        with one_claim_at_a_time(self.claims if state == TrialState.RUNNING else None):
            return self._call(once)

    def set_trial_intermediate_value(self, trial_id: int, step: int,
                                     intermediate_value: float) -> None:
        self._call(self.backend.set_trial_intermediate_value, trial_id, step,
                   intermediate_value)

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._call(self.backend.set_trial_user_attr, trial_id, key, value)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._call(self.backend.set_trial_system_attr, trial_id, key, value)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        return self._call(self.backend.get_trial, trial_id)

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        return self._call(self.backend.get_all_trials, study_id, deepcopy, states)

    def get_best_trial(self, study_id: int) -> FrozenTrial:
        return self._call(self.backend.get_best_trial, study_id)

    def remove_session(self) -> None:
        self.backend.remove_session()

    # ------------------------------------------------------------------ heartbeats

    def record_heartbeat(self, trial_id: int) -> None:
        self.backend_heartbeat().record_heartbeat(trial_id)  # once: the next beat comes soon

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        if not self.settled():
            return []
        # Optuna's storage answers for its heartbeat under this private name.
        stale = self._call(self.backend_heartbeat()._get_stale_trial_ids, study_id)
        return stale + [i for i in self._call(never_beat, self.backend, study_id)
                        if i not in stale]

    def get_heartbeat_interval(self) -> int | None:
        return self.backend_heartbeat().get_heartbeat_interval()

    def get_heartbeat_stale_trial_callback(
            self) -> Callable[[Any, FrozenTrial], None] | None:
        return self.backend_heartbeat().get_heartbeat_stale_trial_callback()


@contextmanager
def without_waiting(storage: BaseStorage) -> Iterator[None]:
    """Calls on ``storage`` within are tried once when it is a :class:`RetryingStorage`."""
    if isinstance(storage, RetryingStorage):
        with storage.tried_once():
            yield
    else:
        yield
