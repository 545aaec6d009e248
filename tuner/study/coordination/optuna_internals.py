"""The parts of Optuna that the study's storage needs and that Optuna exports under no public
name, in this one module (checked on Optuna 5.0.0 and 5.1.0: :data:`CHECKED_ON`).

- ``_CachedStorage``: what Optuna wraps an RDB storage in (``optuna.storages`` lists the name,
  with its underscore); its ``_backend`` is the RDB storage under it.
- ``BaseHeartbeat``: the heartbeat base that the RDB storage and its cache implement, and that
  :class:`~tuner.study.coordination.storage_outage.RetryingStorage` implements in turn.
- ``TrialModel`` and ``scoped_session``: the RDB storage's trial table and its session scope,
  to find running trials that never beat (Optuna keeps heartbeats in its own tables).
- ``FrozenStudy``: what ``BaseStorage.get_all_studies`` returns.

tests/unit/study/test_optuna_internals.py checks each of them against the installed Optuna and
fails, naming this module, when one changes or an unchecked Optuna version is installed.
"""

from __future__ import annotations

from optuna.storages._cached_storage import _CachedStorage as CachedStorage
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.storages._rdb.models import TrialModel
from optuna.storages._rdb.storage import _create_scoped_session as scoped_session
from optuna.study._frozen import FrozenStudy

CHECKED_ON = ("5.0", "5.1")
"""The Optuna versions (major.minor) whose private names above were read and tested."""

__all__ = ["CHECKED_ON", "BaseHeartbeat", "CachedStorage", "FrozenStudy", "TrialModel",
           "scoped_session"]
