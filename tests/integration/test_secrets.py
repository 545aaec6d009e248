"""Secrets given to a study are never written: a planted TUNER_HF_TOKEN (the engines get it),
a password in the storage URL and a token in the tracking URL's user info. After a real study
on the stand-in engine (real processes, a real PostgreSQL and MLflow server), `tune status`
and `tune report`, nothing holds them: not the run folder (config, trials, records, engine
logs, the tracking outbox), not the Optuna storage (every row of every table), not the MLflow
store or its artifacts, not what the commands printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import MlflowServer, Postgres
from tests.integration.standin_study import (
    STUDY,
    engines_of,
    errors_of,
    standin_env,
    start,
    tune_command,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HF_TOKEN = "hf_pl4nted_t0ken_do_not_write_5120"
DB_PASSWORD = "pg_pl4nted_p4ss_do_not_write_7731"
TRACKING_TOKEN = "ml_pl4nted_t0ken_do_not_write_2208"
PLANTED = (HF_TOKEN, DB_PASSWORD, TRACKING_TOKEN)


def with_password(url: str, password: str) -> str:
    """``postgresql://tuner@host/db`` with ``password`` for its user (the test server trusts
    local connections, so any password is accepted and none is checked)."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{host}"


def files_holding(root: Path, secrets: tuple[str, ...]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {s[:6]}..." for s in secrets if s.encode() in data]
    return found


def rows_holding(url: str, secrets: tuple[str, ...]) -> list[str]:
    """Every row of every table of the database at ``url`` that holds one of ``secrets``."""
    found = []
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                text = repr(row)
                found += [f"{table}: {s[:6]}..." for s in secrets if s in text]
    return found


def test_planted_secrets_are_never_written(tiny_model: Path, tmp_path: Path,
                                           postgres: Postgres, tracking: MlflowServer) -> None:
    storage = postgres.create_database("optuna_secrets")
    secret_storage = with_password(storage, DB_PASSWORD)
    secret_tracking = tracking.url.replace("http://", f"http://tuner:{TRACKING_TOKEN}@")
    env = standin_env(tmp_path / "standin", TUNER_HF_TOKEN=HF_TOKEN)
    out = tmp_path / "runs"
    tune = start(tune_command(tiny_model, out, 2, "--storage", secret_storage,
                              "--tracking-uri", secret_tracking), tmp_path / "tune", env)
    wait_for(lambda: engines_of(tune.pid), 120, "an engine", tune, tmp_path / "tune")
    engine_env = engines_of(tune.pid)[0].environ()
    assert engine_env.get("HF_TOKEN") == HF_TOKEN  # the engine got it: it has to
    assert tune.wait(timeout=600) == 0, errors_of(tmp_path / "tune")[-3000:]

    printed = [(tmp_path / "tune" / name).read_text() for name in ("out.txt", "err.txt")]
    for cmd in (["status", "--study", STUDY, "--storage", secret_storage],
                ["report", "--dir", str(out / STUDY)]):
        done = subprocess.run([sys.executable, "-m", "tuner", *cmd], capture_output=True,
                              text=True, timeout=300, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        printed += [done.stdout, done.stderr]

    assert files_holding(out, PLANTED) == []  # run folder: config, trials, logs, records
    assert files_holding(tracking.folder, PLANTED) == []  # the MLflow store, its artifacts
    assert rows_holding(storage, PLANTED) == []  # the Optuna storage
    assert [s[:6] for s in PLANTED for text in printed if s in text] == []
