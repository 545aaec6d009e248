"""Engine faults on a real engine: one `tune` study of the llama-server that set-up builds, on
the tiny model, whose trials meet each fault a user's engine can (the stand-in engine's
faults are test_faults.py; the outages of MLflow, PostgreSQL and the disk are
test_outages.py, where the engine does not matter):

- trial 0, the defaults: the engine dies mid-step (SIGKILL from the test);
- trial 1: it runs out of memory at start: a 4M-token context under an address-space limit on
  the engine alone (TUNER_ENGINE_MEMORY_GIB=3), never on the host;
- trial 2: it fails to start, refusing a knob value (a batch and micro-batch of 0);
- trial 3: it hangs mid-step (SIGSTOP from the test);
- trial 4: left alone.

Each ends as that trial's outcome with a one-line reason, the study goes on, no engine is left
running, and every trial recorded before a fault is kept."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import httpx
import optuna
import psutil
import pytest
from optuna.trial import TrialState

from tests.integration.standin_study import (
    engines_of,
    errors_of,
    gone,
    start,
    trials,
    wait_for,
)
from tuner.study.coordination import rejected

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
STUDY = "llama-faults"


def engine_port(engine: psutil.Process) -> int:
    argv = engine.cmdline()
    return int(argv[argv.index("--port") + 1])


def tokens_served(port: int) -> float:
    """llama-server's own count of the tokens it generated (0 while it is not answering)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
    except httpx.HTTPError:
        return 0.0
    found = re.search(r"^llamacpp:tokens_predicted_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def engine_under_load(tune_pid: int, trial: int, run_dir: Path) -> psutil.Process:
    """The engine of ``trial`` once it has served 200 tokens (past its warm-up: measuring)."""
    def serving() -> psutil.Process | None:
        if trial in trials(run_dir):
            pytest.fail(f"trial {trial} ended before the test could fault its engine")
        found = [e for e in engines_of(tune_pid) if len(trials(run_dir)) == trial]
        return found[0] if found and tokens_served(engine_port(found[0])) >= 200 else None

    deadline = time.monotonic() + 180
    while (engine := serving()) is None:
        assert time.monotonic() < deadline, f"trial {trial}'s engine never got under load"
        time.sleep(0.2)
    return engine


@pytest.mark.slow
def test_a_real_engine_killed_out_of_memory_refusing_and_hung_each_ends_its_trial(
        gguf_model: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TUNER_ENGINE_MEMORY_GIB": "3"}
    tune = start([sys.executable, "-m", "tuner", "--engine", "llamacpp",
                  "--workload", str(DATA / "workload-llamacpp-faults.yaml"),
                  "--search-space", str(DATA / "space-llamacpp-faults.yaml"),
                  "--enqueue", str(DATA / "enqueue-llamacpp-faults.yaml"),
                  "--model", str(gguf_model), "--trials", "5", "--remeasure-top", "0",
                  "--out", str(tmp_path), "--study-name", STUDY], tmp_path, env)
    run_dir = tmp_path / STUDY

    killed = engine_under_load(tune.pid, 0, run_dir)
    killed.send_signal(signal.SIGKILL)  # dies mid-step
    wait_for(lambda: 0 in trials(run_dir), 60, "the killed engine's trial", tune, tmp_path)

    wait_for(lambda: len(trials(run_dir)) >= 3, 120, "the OOM and the refused start", tune,
             tmp_path)
    stopped = engine_under_load(tune.pid, 3, run_dir)
    os.killpg(stopped.pid, signal.SIGSTOP)  # alive, answering nothing
    wait_for(lambda: 3 in trials(run_dir), 60, "the hung engine's trial", tune, tmp_path)
    wait_for(lambda: gone(stopped.pid), 15, "the hung engine killed")

    assert tune.wait(timeout=300) == 0, errors_of(tmp_path)[-3000:]
    done = trials(run_dir)  # every file parses: nothing recorded before a fault was lost
    outcomes = {n: (t["outcome"], t["detail"]) for n, t in done.items()}
    assert outcomes[0][0] == "crashed_during_load", outcomes[0]
    assert outcomes[0][1].startswith("engine exited with code -9 under load"), outcomes[0]
    assert outcomes[1][0] == "oom", outcomes[1]
    assert "failed to allocate" in outcomes[1][1], outcomes[1]
    assert outcomes[2][0] == "invalid_config", outcomes[2]
    assert "n_batch and n_ubatch cannot both be zero" in outcomes[2][1], outcomes[2]
    assert outcomes[3][0] == "hung", outcomes[3]
    assert outcomes[3][1].endswith("; the engine was killed"), outcomes[3]
    assert outcomes[4][0] in ("ok", "slo_infeasible"), outcomes[4]
    assert all("\n" not in detail for _, detail in outcomes.values())  # one line each
    assert not engines_of(tune.pid)
    assert killed.pid not in psutil.pids() or gone(killed.pid)

    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{run_dir / 'study.db'}")
    finished = [t for t in study.get_trials(states=(TrialState.COMPLETE,)) if not rejected(t)]
    assert sorted(t.number for t in finished) == [0, 1, 2, 3, 4]
    assert {t.number: t.user_attrs["outcome"] for t in finished} == {
        n: o for n, (o, _) in outcomes.items()}
