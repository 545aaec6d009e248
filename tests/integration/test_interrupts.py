"""Interrupting `tune` leaves no engine behind, and a killed study resumes intact."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from tests.integration.standin_study import (
    STUDY,
    engines_of,
    errors_of,
    standin_env,
    start,
    tune_command,
)
from tests.integration.standin_study import wait_for as wait_for_study

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def wait_for(check: Callable[[], object], timeout: float, what: str,
             tune: subprocess.Popen[bytes] | None = None, log: Path | None = None) -> None:
    """Wait for ``check``; fail at the timeout, or at once (with the end of ``log``) if the
    ``tune`` it waits on has exited."""
    deadline = time.monotonic() + timeout
    while not check():
        if tune is not None and tune.poll() is not None:
            tail = log.read_text()[-2000:] if log is not None else ""
            pytest.fail(f"tune exited ({tune.returncode}) before {what}:\n{tail}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


def vllm_command(model: Path, out: Path, study: str) -> list[str]:
    return [sys.executable, "-m", "tuner", "--engine", "vllm",
            "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
            "--search-space", str(REPO / "tests" / "data" / "space-ci.yaml"),
            "--model", str(model), "--trials", "2", "--remeasure-top", "0",
            "--out", str(out), "--study-name", study]


def test_sigterm_mid_trial_leaves_no_engine(tiny_model: Path, tmp_path: Path) -> None:
    with (tmp_path / "err.txt").open("w") as err:
        tune = subprocess.Popen(vllm_command(tiny_model, tmp_path, "term"),
                                stdout=subprocess.DEVNULL, stderr=err)
        wait_for(lambda: len(engines_of(tune.pid)) >= 2, 180, "the engine and its children",
                 tune, tmp_path / "err.txt")
        time.sleep(3)
        tune.send_signal(signal.SIGTERM)
        assert tune.wait(timeout=90) == 130
    assert "interrupted" in (tmp_path / "err.txt").read_text()
    wait_for(lambda: not engines_of(tune.pid), 10, "no engine process left")


def test_sigkill_leaves_orphans_that_cleanup_removes(tiny_model: Path, tmp_path: Path) -> None:
    with (tmp_path / "err.txt").open("w") as err:
        tune = subprocess.Popen(vllm_command(tiny_model, tmp_path, "kill"),
                                stdout=subprocess.DEVNULL, stderr=err)
    wait_for(lambda: len(engines_of(tune.pid)) >= 3, 180, "vLLM's process tree", tune,
             tmp_path / "err.txt")
    tune.kill()
    tune.wait()
    time.sleep(2)
    # The kernel kills the engine's first process with the tuner; its children outlive it.
    survivors = engines_of(tune.pid)
    assert survivors, "no engine process outlived the killed tuner: nothing left to clean up"
    done = subprocess.run([sys.executable, "-m", "tuner", "cleanup"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    removed = re.findall(r"^removed (.+)$", done.stdout, re.MULTILINE)
    assert {f"pid {p.pid}" for p in survivors} <= {r.split(" (")[0] for r in removed}, \
        done.stdout
    assert f"{len(removed)} orphaned engine(s) removed" in done.stdout
    wait_for(lambda: not engines_of(tune.pid), 10, "no engine process left")


def test_sigkill_then_rerun_cleans_up_and_resumes(tiny_model: Path, tmp_path: Path) -> None:
    """On the stand-in engine (real processes behind the real launcher, trials of seconds):
    the re-run retries the killed trial after its 4 silent beats and keeps the finished one."""
    cmd = tune_command(tiny_model, tmp_path, 2)
    env = standin_env(tmp_path / "standin")
    first_trial = tmp_path / STUDY / "trials" / "trial-000.json"
    tune = start(cmd, tmp_path / "first", env)
    try:
        wait_for_study(first_trial.exists, 120, "the first trial to finish", tune,
                       tmp_path / "first")
        wait_for_study(lambda: engines_of(tune.pid), 60, "the second trial's engine", tune,
                       tmp_path / "first")
        time.sleep(1)
    finally:
        tune.kill()
        tune.wait()
    kept = first_trial.read_text()
    rerun = start(cmd, tmp_path / "second", env)
    assert rerun.wait(timeout=300) == 0, errors_of(tmp_path / "second")[-3000:]
    assert not engines_of(tune.pid), "an engine of the killed run survived the re-run"
    assert first_trial.read_text() == kept
    storage = f"sqlite:///{tmp_path / STUDY / 'study.db'}"
    study = optuna.load_study(study_name=STUDY, storage=storage)
    states = [t.state for t in study.trials]
    assert states[0] == optuna.trial.TrialState.COMPLETE
    assert optuna.trial.TrialState.FAIL in states  # the trial the kill interrupted
    summary = json.loads((tmp_path / STUDY / "summary.json").read_text())
    assert summary["defaults_trial"]["number"] == 0
    assert sum(v for k, v in summary["trials"].items() if k != "rejected_before_launch") == 2
