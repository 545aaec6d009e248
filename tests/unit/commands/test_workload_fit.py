"""`tune workload fit`: the files it writes load; through the real command line, a bad log
exits 2 with one line."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from rich.console import Console

from tuner.commands.workload_fit import workload_fit_command
from tuner.workload import load_workload


def tune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner", *args], capture_output=True,
                          text=True, timeout=120)


def test_fit_writes_a_workload_and_a_report(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("timestamp,input_tokens,output_tokens\n"
                   + "".join(f"{i * 0.5},{100 + i % 7},{20 + i % 5}\n" for i in range(50)))
    done = tune("workload", "fit", "--from", str(log), "--out", str(tmp_path / "w.yaml"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "w.yaml").is_file()
    assert (tmp_path / "w.fit.md").is_file()


def test_a_bad_log_is_one_line_and_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("timestamp,input_tokens,output_tokens\n2,10,5\n1,10,5\n")
    done = tune("workload", "fit", "--from", str(log), "--out", str(tmp_path / "w.yaml"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "log.csv:3: timestamp 1 is earlier" in lines[0]


def test_the_written_workload_loads(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    log = tmp_path / "log.csv"
    rows = [f"{t:.3f},{int(i)},{int(o)}" for t, i, o in zip(
        np.cumsum(rng.exponential(0.5, 500)), rng.choice([10, 100, 1000, 10000], 500),
        rng.integers(10, 100, 500), strict=True)]
    log.write_text("timestamp,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    report = workload_fit_command(log, tmp_path / "out" / "w.yaml", model="m", rate="mean",
                                  console=Console(file=None, quiet=True))
    workload = load_workload(tmp_path / "out" / "w.yaml")
    assert workload.model == "m"
    assert "## Not fitted" in report.read_text()
    assert any((tmp_path / "out").glob("*.txt"))  # 4 modes in 3 classes: one is empirical
    assert (tmp_path / "out" / "w.fit.png").stat().st_size > 0
