"""A `tune` study on the stand-in engine (tests/integration/standin_engine.py), run as a real
process with real engines, files and servers, for the tests that inject faults around it."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
STUDY = "faults"


def standin_env(state: Path, **extra: str) -> dict[str, str]:
    """The environment of a `tune` whose engines are stand-ins; ``state`` is the stand-ins'
    folder (which start is the first), ``extra`` their STANDIN_* settings."""
    return {**os.environ, "TUNER_PIN_CORES": "0", "PYTHONPATH": str(REPO),
            "STANDIN_STATE_DIR": str(state), **extra}


def tune_command(model: Path, out: Path, trials: int, *options: str) -> list[str]:
    """``tune`` on the stand-in engine (tests/integration/fake_tune.py)."""
    return [sys.executable, "-m", "tests.integration.fake_tune", "standin", "--engine", "vllm",
            "--workload", str(DATA / "workload-faults.yaml"),
            "--search-space", str(DATA / "space-ci.yaml"), "--model", str(model),
            "--trials", str(trials), "--remeasure-top", "0", "--out", str(out),
            "--study-name", STUDY, "--heartbeat", "1", *options]


STARTED: list[subprocess.Popen[str]] = []
"""The tuners the running test started: conftest stops those still running when it ends (a
failed test must not leave a study running)."""


def start(cmd: list[str], folder: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``cmd`` running in ``folder``, its output in out.txt and err.txt there."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(cmd, cwd=folder, env=env, text=True,
                            stdout=(folder / "out.txt").open("w"),
                            stderr=(folder / "err.txt").open("w"))
    STARTED.append(proc)
    return proc


def stop_started() -> None:
    """Stop every tuner :func:`start` started that still runs, and its engines."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is not None:
            continue
        engines = engines_of(proc.pid)
        proc.kill()
        proc.wait(timeout=30)
        for engine in engines:
            with contextlib.suppress(psutil.Error):
                engine.kill()


def errors_of(folder: Path) -> str:
    return (folder / "err.txt").read_text()


def wait_for(check: Callable[[], object], timeout: float, what: str,
             tune: subprocess.Popen[str] | None = None, folder: Path | None = None) -> None:
    """Wait for ``check``; fail at the timeout, or at once if ``tune`` has exited."""
    deadline = time.monotonic() + timeout
    while not check():
        if tune is not None and tune.poll() is not None:
            tail = errors_of(folder)[-3000:] if folder is not None else ""
            pytest.fail(f"tune exited ({tune.returncode}) before {what}:\n{tail}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def engines_of(owner: int) -> list[psutil.Process]:
    """Engine processes started by the tuner with pid ``owner`` (they carry its marker)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("TUNER_OWNER_PID") == str(owner):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def trials(run_dir: Path) -> dict[int, dict[str, Any]]:
    """This host's finished trials, as their files hold them (each must parse whole)."""
    return {int(p.stem.split("-")[1]): json.loads(p.read_text())
            for p in sorted((run_dir / "trials").glob("trial-*.json"))}


def launched(run_dir: Path) -> dict[int, dict[str, Any]]:
    return {n: t for n, t in trials(run_dir).items() if not t["rejected_before_launch"]}


def told(run_dir: Path) -> set[int]:
    """The trials the study's storage holds as finished, read-only (none before it has any).
    A trial's file is written before the storage takes it, and removed again if it does not
    (a disk that fills in between): only both make the trial finished."""
    db = run_dir / "study.db"
    if not db.exists():
        return set()
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            return {n for (n,) in con.execute("SELECT number FROM trials WHERE state = 'COMPLETE'")}
    except sqlite3.OperationalError:  # the tables are not made yet
        return set()
