"""Progress where the output is not a terminal: plain lines as the work goes on, not a live
panel that shows nothing until the end. Against the test SSE server (a fake at the HTTP
seam); the same against a real engine is tests/integration/test_bench_progress.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sse_server import sse_server
from tests.unit.cli_runner import TUNE

WORKLOAD = """\
name: piped
model: tiny-llama
classes:
  - {name: c, weight: 1, input: {dist: fixed, value: 32}, output: {dist: fixed, value: 8}}
arrival: {process: constant, rate: 8}
stop: {duration_s: 3}
warmup: {requests: 2}
slo: {ttft_p95_ms: 1000, itl_p95_ms: 200}
cost: {usd_per_hour: 1.0}
"""


@pytest.mark.slow
def test_piped_bench_prints_progress_lines_before_it_ends(tiny_model: Path,
                                                          tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    errors = tmp_path / "stderr.txt"
    with sse_server(gap_s=0.01) as url, errors.open("w") as err:
        proc = subprocess.Popen([*TUNE, "bench", "--endpoint", url, "--workload",
                                 str(workload), "--tokenizer", str(tiny_model)],
                                stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        running_then = proc.poll() is None
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    assert proc.returncode == 0, errors.read_text()
    assert running_then, "the first line came only when the command had ended"
    assert first.startswith("prompts: seed"), first  # printed before the run starts
    lines = [first.rstrip("\n"), *rest.splitlines()]
    assert any(line.startswith("workload: piped") for line in lines), lines
    assert "phase: probing endpoint" in lines
    run_line = next(line for line in lines if line.startswith("load 8 req/s: sent "))
    assert "done" in run_line
    assert "p95 TTFT" in run_line
    assert run_line.endswith(": pass"), run_line
    assert "╭" not in rest
    assert "\x1b[" not in rest


def test_plain_lines_come_while_a_run_goes_on(tmp_path: Path) -> None:
    """A run longer than the line interval shows its counters while it runs."""
    from rich.console import Console

    from tuner.loadgen import RequestRecord
    from tuner.ui import PlainProgress

    out = tmp_path / "lines.txt"
    with out.open("w") as fh, PlainProgress(Console(file=fh), every_s=0.05) as progress:
        progress.status("phase", "starting engine (1s)")
        progress.status("phase", "starting engine (2s)")  # only its number moved: not shown
        run = progress.run("step 1, load 2 req/s", 10)
        for warm in (True, False, False):
            rec = RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=1,
                                planned_output_tokens=1, scheduled_ns=0, warmup=warm,
                                first_token_ns=3_000_000, done_ns=4_000_000)
            run.request_sent(rec)
            run.request_done(rec)
        time.sleep(0.3)
        run.finished()
        progress.status("phase", "measuring")
    lines = out.read_text().splitlines()
    assert lines[0] == "phase: starting engine (1s)"
    assert "phase: starting engine (2s)" not in lines
    assert ("step 1, load 2 req/s: sent 2/10 (+1 warm-up), done 2, errors 0, "
            "p95 TTFT 3.0 ms, p95 ITL -") in lines
    assert lines[-1] == "phase: measuring"


@pytest.mark.slow
def test_a_piped_study_prints_a_line_per_trial_as_it_goes(tiny_model: Path,
                                                          tmp_path: Path) -> None:
    """`tune` with the test-only fake engine (tests/integration/fake_tune.py, no engine
    runs): each trial's start and outcome are lines while the study goes on."""
    import os

    from tests.unit.cli_runner import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO), "TUNER_PIN_CORES": "0",
           "TUNER_FAKE_TRIAL_S": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.integration.fake_tune", "make",
                             "--engine", "vllm", "--workload",
                             str(REPO / "experiments" / "workloads" / "smoke.yaml"),
                             "--model", str(tiny_model), "--trials", "2", "--remeasure-top",
                             "0", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    seen = []
    while not (line := proc.stdout.readline()).startswith("trial 0 (defaults): ok"):
        assert line, f"no trial line before the end: {seen}"
        seen.append(line.rstrip())
    running_then = proc.poll() is None
    rest = proc.stdout.read()
    assert proc.wait(timeout=120) == 0
    assert running_then, "the first trial's line came only when the study had ended"
    assert "trial: 1 of 2 (optuna #0), engine defaults" in seen
    assert "trial: 2 of 2 (optuna #1)" in rest
