"""Faults around a trial, injected on purpose into a real `tune` study whose engines are real
processes serving real HTTP (the stand-in engine, tests/integration/standin_engine.py): an
engine stopped mid-step (SIGSTOP), one too slow to start, one whose port another program takes
before it binds, and a run folder whose disk fills. Each has its stated result: the study goes
on (the trial classified, its engine gone), or it stops with one line and loses no finished
trial, and the same command run again resumes it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from tests.integration.standin_study import (
    STUDY,
    engines_of,
    errors_of,
    gone,
    launched,
    standin_env,
    start,
    told,
    trials,
    tune_command,
    wait_for,
)

pytestmark = pytest.mark.integration


def completions_in(log: Path) -> int:
    try:
        return log.read_text().count("POST /v1/completions")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_an_engine_stopped_mid_step_is_hung_killed_and_the_study_goes_on(
        tiny_model: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / STUDY
    tune = start(tune_command(tiny_model, tmp_path, 3), tmp_path,
                 standin_env(tmp_path / "standin"))
    # Past readiness and the probe: the engine is being warmed up or measured.
    wait_for(lambda: completions_in(run_dir / "logs" / "trial-000.log") >= 15, 120,
             "the first engine under load", tune, tmp_path)
    engine = engines_of(tune.pid)[0]
    os.killpg(engine.pid, signal.SIGSTOP)  # the whole engine stops answering, alive
    stopped = time.monotonic()
    wait_for(lambda: 0 in trials(run_dir), 60, "the stopped engine's trial", tune, tmp_path)
    took = time.monotonic() - stopped
    hung = trials(run_dir)[0]
    assert hung["outcome"] == "hung", hung["detail"]
    assert hung["detail"].startswith("engine stopped answering: no token on any request and "
                                     "no answer from http://127.0.0.1:")
    assert hung["detail"].endswith("; the engine was killed")
    assert took < 5 + 10, f"the hung trial took {took:.0f}s after the engine stopped"
    wait_for(lambda: gone(engine.pid), 10, "the stopped engine killed")

    assert tune.wait(timeout=300) == 0, errors_of(tmp_path)[-3000:]
    done = launched(run_dir)
    assert len(done) == 3
    assert [t["outcome"] for n, t in sorted(done.items()) if n != 0] == ["ok", "ok"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["trials"]["hung"] == 1
    assert not engines_of(tune.pid)


@pytest.mark.slow
def test_an_engine_too_slow_to_start_times_out_with_its_log_and_the_study_goes_on(
        tiny_model: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / STUDY
    env = standin_env(tmp_path / "standin", STANDIN_FIRST_LOAD_S="600")  # the first start
    tune = start(tune_command(tiny_model, tmp_path, 2, "--startup-timeout", "4"), tmp_path, env)
    wait_for(lambda: engines_of(tune.pid), 60, "the slow engine", tune, tmp_path)
    slow = engines_of(tune.pid)[0]
    assert tune.wait(timeout=300) == 0, errors_of(tmp_path)[-3000:]
    first = trials(run_dir)[0]
    assert first["outcome"] == "startup_timeout"
    assert re.fullmatch(r"engine not ready after 4s \(startup timeout\); its log ends: "
                        r"loading weights: \d+s of 600s", first["detail"]), first["detail"]
    assert "loading weights: 0s of 600s" in first["log_tail"]
    assert first["timing"]["startup_s"] < 4 + 6
    assert gone(slow.pid)  # killed, not left loading
    assert [t["outcome"] for n, t in sorted(launched(run_dir).items()) if n != 0] == ["ok"]


@pytest.mark.slow
def test_a_port_taken_before_the_engine_binds_it_is_retried_on_another(
        tiny_model: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / STUDY
    env = standin_env(tmp_path / "standin", STANDIN_FIRST_LOAD_S="4")  # binds 4 s late
    tune = start(tune_command(tiny_model, tmp_path, 1), tmp_path, env)
    wait_for(lambda: engines_of(tune.pid), 60, "the first engine", tune, tmp_path)
    argv = engines_of(tune.pid)[0].cmdline()
    port = int(argv[argv.index("--port") + 1])
    with socket.socket() as thief:  # another program takes it between the check and the bind
        thief.bind(("127.0.0.1", port))
        thief.listen(1)
        assert tune.wait(timeout=300) == 0, errors_of(tmp_path)[-3000:]
    first = trials(run_dir)[0]
    assert first["outcome"] == "ok", first["detail"]
    assert f"--port {port} " not in first["command"] + " "
    assert "another program took the engine's port before it bound it; starting it again on " \
           "another port" in errors_of(tmp_path)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs of its own (mounting needs root, as CI runs the tests)."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test mounts a tmpfs: run it as root (CI does)")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], check=True,
                   capture_output=True, timeout=30)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to its last byte; the file that does it."""
    filler = disk / "filler"
    chunk = b"\0" * 2**20
    with filler.open("wb", buffering=0) as fh:
        for size in (2**20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(chunk[:size])
    assert shutil.disk_usage(disk).free < 4096
    return filler


@pytest.mark.slow
def test_a_full_disk_stops_the_study_with_one_line_and_a_rerun_resumes(
        tiny_model: Path, tmp_path: Path, small_disk: Path) -> None:
    run_dir = small_disk / STUDY
    cmd = tune_command(tiny_model, small_disk, 4)
    env = standin_env(tmp_path / "standin")
    tune = start(cmd, tmp_path / "first", env)
    wait_for(lambda: len(launched(run_dir).keys() & told(run_dir)) >= 2, 180,
             "two finished trials", tune, tmp_path / "first")
    filler = fill(small_disk)
    assert tune.wait(timeout=300) == 1
    err = errors_of(tmp_path / "first")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err[-3000:]
    assert errors[0].startswith(f"error: no space left on the device of {run_dir}")
    assert errors[0].endswith("free space there and run the same command again to resume")
    assert "Traceback" not in err
    assert not engines_of(tune.pid)

    kept = trials(run_dir)  # each parses whole: none was half-written
    assert len(launched(run_dir)) >= 2
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{run_dir / 'study.db'}")
    done = {t.number for t in study.get_trials(states=(TrialState.COMPLETE,))}
    assert done == set(kept)  # every finished trial in the storage and on disk, no other

    filler.unlink()  # space freed: the same command resumes the study
    rerun = start(cmd, tmp_path / "second", env)
    assert rerun.wait(timeout=600) == 0, errors_of(tmp_path / "second")[-3000:]
    assert len(launched(run_dir)) == 4
    assert {n: t for n, t in trials(run_dir).items() if n in kept} == kept
