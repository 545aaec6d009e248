"""The real ``tune`` entry point in a subprocess, and the one-line-error assertion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).parent / "tune"
TUNE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "tuner"]
"""The console script pip installed (``tune``), as a user runs it."""


def tune(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TUNE, *args], capture_output=True, text=True, timeout=timeout)


def tune_all(*commands: list[str], timeout: float = 120
             ) -> list[subprocess.CompletedProcess[str]]:
    """Several ``tune`` commands at once (each a process), in the order given."""
    procs = [subprocess.Popen([*TUNE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for args in commands]
    done = []
    for args, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess([*TUNE, *args], proc.returncode, out, err))
    return done


def one_line_error(done: subprocess.CompletedProcess[str], code: int, needle: str) -> str:
    """The command exited ``code`` and its first stderr line (past logged warnings) is an
    error containing ``needle``; returns that line."""
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("WARNING ")]
    assert lines, "no error line"
    assert lines[0].startswith("error: "), lines
    assert needle in lines[0], lines[0]
    return lines[0]
