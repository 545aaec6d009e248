"""Claims of queued trials on a SQLite study file: of two workers that claim one queued trial
at the same moment, exactly one gets it (SQLite ignores the row lock Optuna asks for; a lock
file beside the database stands in for it)."""

from __future__ import annotations

import threading
from pathlib import Path

import optuna
import pytest

from tuner.study.coordination.shared_study import storage_for, take_queued
from tuner.study.coordination.sqlite_file import claims_lock

ROUNDS = 40


def test_two_workers_claiming_at_once_never_both_win(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'claims.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = [optuna.create_study(study_name="s", storage=storage_for(url, None),
                                   load_if_exists=True) for _ in range(2)]
    for n in range(ROUNDS):
        studies[0].enqueue_trial({"x": n}, skip_if_exists=False)
    queued = studies[0].get_trials(deepcopy=False)
    won = [[False] * ROUNDS for _ in range(2)]
    barrier = threading.Barrier(2)

    def worker(i: int) -> None:
        for n, trial in enumerate(queued):
            barrier.wait()
            won[i][n] = take_queued(studies[i], trial) is not None

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert [a + b for a, b in zip(won[0], won[1], strict=True)] == [1] * ROUNDS


@pytest.mark.parametrize(("url", "lock"), [
    ("sqlite:////data/study.db", Path("/data/study.db.claims")),
    ("sqlite:///rel/study.db", Path("rel/study.db.claims")),
    ("sqlite://", None),
    ("sqlite:///:memory:", None),
    ("postgresql://tuner@db/tuner", None),
])
def test_the_lock_sits_beside_a_sqlite_file_only(url: str, lock: Path | None) -> None:
    assert claims_lock(url) == lock
