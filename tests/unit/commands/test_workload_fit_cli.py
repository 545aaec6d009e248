"""`tune workload fit` through the real command line: files written, bad logs exit 2."""

import subprocess
import sys
from pathlib import Path


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
