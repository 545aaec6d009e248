"""Servers a study depends on, taken away on purpose while a real `tune` study runs on the
stand-in engine (tests/integration/standin_engine.py): the MLflow tracking server stopped for
30 s and started again, or stopped until the study has ended; the study's PostgreSQL restarted
under it, or stopped and the study interrupted while it waits. The study goes on; what MLflow
missed is logged when it is back (or by the next `tune report`), nothing twice; a trial that
finished during the database's outage is kept; an interrupt stops a waiting study at once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from tests.integration.conftest import MlflowServer, Postgres
from tests.integration.standin_study import (
    STUDY,
    engines_of,
    errors_of,
    launched,
    standin_env,
    start,
    trials,
    tune_command,
    wait_for,
)
from tuner.study import RunFolder
from tuner.study.coordination import driver_url

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def logged(url: str) -> tuple[list[str], str, int]:
    """The study's trial runs in MLflow (their numbers, each as often as logged), its parent
    run's status and how often its end was logged."""
    client = MlflowClient(tracking_uri=url)
    exp = client.get_experiment_by_name(STUDY)
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'trial'",
                              max_results=1000)
    parent = client.search_runs([exp.experiment_id], "tags.`tuner.role` = 'study'")
    assert len(parent) == 1
    ends = len(client.get_metric_history(parent[0].info.run_id, "wall_s"))
    return sorted(r.data.tags["tuner.trial"] for r in runs), parent[0].info.status, ends


def finished_numbers(run_dir: Path) -> list[str]:
    """The numbers of the study's finished trials (launched or rejected), from its storage."""
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{run_dir / 'study.db'}")
    return sorted(str(t.number) for t in study.get_trials(states=(TrialState.COMPLETE,)))


def test_a_tracking_server_down_for_30s_misses_nothing_and_gets_nothing_twice(
        tiny_model: Path, tmp_path: Path, tracking: MlflowServer) -> None:
    run_dir = tmp_path / STUDY
    tune = start(tune_command(tiny_model, tmp_path, 12, "--tracking-uri", tracking.url),
                 tmp_path, standin_env(tmp_path / "standin"))
    wait_for(lambda: len(trials(run_dir)) >= 2, 180, "two finished trials", tune, tmp_path)
    tracking.stop()
    down, before = time.monotonic(), len(trials(run_dir))
    wait_for(lambda: len(trials(run_dir)) > before, 60, "a trial ended while MLflow is down",
             tune, tmp_path)
    time.sleep(max(0.0, 30 - (time.monotonic() - down)))
    tracking.start()
    assert tune.poll() is None, "the study ended before the tracking server came back"
    assert tune.wait(timeout=900) == 0, errors_of(tmp_path)[-3000:]

    err = errors_of(tmp_path)
    assert err.count(f"MLflow at {tracking.url} unreachable") == 1, err[-3000:]
    assert f"MLflow at {tracking.url} answers again" in err
    assert not RunFolder(run_dir).outbox.exists()  # everything kept was delivered
    numbers, status, ends = logged(tracking.url)
    assert numbers == finished_numbers(run_dir)  # every trial, each once
    assert (status, ends) == ("FINISHED", 1)


def test_a_tracking_server_down_at_the_end_is_caught_up_by_tune_report(
        tiny_model: Path, tmp_path: Path, tracking: MlflowServer) -> None:
    run_dir = tmp_path / STUDY
    tune = start(tune_command(tiny_model, tmp_path, 3, "--tracking-uri", tracking.url),
                 tmp_path, standin_env(tmp_path / "standin"))
    wait_for(lambda: trials(run_dir), 180, "a finished trial", tune, tmp_path)
    tracking.stop()
    assert tune.wait(timeout=600) == 0, errors_of(tmp_path)[-3000:]  # the study went on
    assert "the study's end is kept in" in errors_of(tmp_path)
    kept = sorted(p.name for p in RunFolder(run_dir).outbox.iterdir())
    assert "study-end.json" in kept
    assert "target.json" in kept

    tracking.start()
    report = subprocess.run([sys.executable, "-m", "tuner", "report", "--dir", str(run_dir)],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert (f"MLflow at {tracking.url}: {len(kept) - 1} record(s) kept by the study logged now"
            in report.stdout), report.stdout
    assert not RunFolder(run_dir).outbox.exists()
    numbers, status, ends = logged(tracking.url)
    assert numbers == finished_numbers(run_dir)
    assert (status, ends) == ("FINISHED", 1)

    again = subprocess.run([sys.executable, "-m", "tuner", "report", "--dir", str(run_dir)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "MLflow" not in again.stdout  # nothing was left to log
    assert logged(tracking.url)[0] == numbers


def mid_trial(run_dir: Path) -> bool:
    """The newest engine log is a running trial's (no result yet) that has served requests."""
    logs = sorted((run_dir / "logs").glob("trial-*.log"), key=lambda p: p.stat().st_mtime)
    if not logs:
        return False
    number = int(logs[-1].stem.split("-")[1])
    return number not in trials(run_dir) and logs[-1].read_text().count(
        "POST /v1/completions") >= 5


def stopped_mid_trial(postgres: Postgres, storage: str, model: Path, tmp_path: Path, *,
                      finished: int) -> subprocess.Popen[str]:
    """A 5-trial study on ``storage`` whose database is stopped after ``finished`` trials,
    while the next one's engine is under load (so that it ends in the outage)."""
    run_dir = tmp_path / STUDY
    tune = start(tune_command(model, tmp_path, 5, "--storage", storage), tmp_path,
                 standin_env(tmp_path / "standin"))
    wait_for(lambda: len(launched(run_dir)) >= finished, 180, "finished trials", tune, tmp_path)
    wait_for(lambda: mid_trial(run_dir), 120, "a trial under way", tune, tmp_path)
    postgres.stop()
    return tune


def test_postgres_restarted_mid_study_loses_no_trial(tiny_model: Path, tmp_path: Path,
                                                     postgres: Postgres) -> None:
    storage = postgres.create_database("optuna_restart")
    run_dir = tmp_path / STUDY
    tune = stopped_mid_trial(postgres, storage, tiny_model, tmp_path, finished=2)
    before = set(trials(run_dir))
    try:
        # A trial ends while the database is away: its result is on disk, its tell waits.
        wait_for(lambda: set(trials(run_dir)) - before, 120, "a trial ended in the outage",
                 tune, tmp_path)
        during = sorted(set(trials(run_dir)) - before)
        time.sleep(3)
    finally:
        postgres.start()
    assert tune.wait(timeout=600) == 0, errors_of(tmp_path)[-3000:]

    err = errors_of(tmp_path)
    assert "study storage postgresql://tuner@127.0.0.1" in err
    assert "unreachable" in err
    assert "is back after" in err
    study = optuna.load_study(study_name=STUDY, storage=driver_url(storage))
    complete = {t.number: t for t in study.get_trials(states=(TrialState.COMPLETE,))}
    on_disk = trials(run_dir)
    for number in during:  # told once the database was back, as it ended
        assert number in complete, f"trial {number}, ended in the outage, is not in the storage"
        assert complete[number].user_attrs["outcome"] == on_disk[number]["outcome"]
    assert set(complete) == set(on_disk)
    assert len(launched(run_dir)) == 5
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sum(v for k, v in summary["trials"].items() if k != "rejected_before_launch") == 5


def test_sigterm_stops_a_study_waiting_for_its_database(tiny_model: Path, tmp_path: Path,
                                                        postgres: Postgres) -> None:
    storage = postgres.create_database("optuna_waiting")
    tune = stopped_mid_trial(postgres, storage, tiny_model, tmp_path, finished=1)
    try:
        wait_for(lambda: "unreachable" in errors_of(tmp_path), 120, "the study waiting",
                 tune, tmp_path)
        tune.send_signal(signal.SIGTERM)
        code = tune.wait(timeout=60)  # not the outage's 10 minutes
    finally:
        postgres.start()
    assert code == 130, errors_of(tmp_path)[-3000:]
    assert errors_of(tmp_path).strip().splitlines()[-1].startswith("error: interrupted")
    assert not engines_of(tune.pid)
