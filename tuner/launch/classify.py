"""Classify why an engine failed from its log and exit code.

Outcome classes: ``oom``, ``invalid_config``, ``startup_timeout``,
``crashed_during_load`` and ``crashed`` (a failure no pattern names). The
engine's own patterns come from its spec; OOM is checked first because an OOM
often surfaces through a generic ValueError as well.
"""

from __future__ import annotations

import re

from tuner.engines import Failures

KILLED_BY_OOM_KILLER = {137, -9}
PORT_TAKEN = re.compile(r"(?i)address already in use|\b(?:errno|os error) 98\b|"
                        r"couldn't bind HTTP server socket")
"""An engine that lost its port to another program between ``free_port`` and its bind: Python
servers (uvicorn: "[Errno 98] ... address already in use"), Rust ones (TGI's router: "Address
already in use (os error 98)"), llama-server ("couldn't bind HTTP server socket")."""


def classify_log(text: str, failures: Failures, exit_code: int | None) -> tuple[str, str]:
    """``(outcome, evidence)``: the class and the log line that decided it."""
    for outcome, patterns in (("oom", failures.oom), ("invalid_config", failures.invalid_config)):
        line = first_line(text, patterns)
        if line is not None:
            return outcome, line
    if exit_code in KILLED_BY_OOM_KILLER:
        return "oom", f"killed by SIGKILL (exit {exit_code}), as the OOM killer does"
    if exit_code == 2:
        return "invalid_config", "exit code 2 (command-line usage error)"
    return "crashed", f"exit code {exit_code}"


def first_oom_line(text: str, failures: Failures) -> str | None:
    """The first OOM line, so a doomed start stops at once instead of timing out."""
    return first_line(text, failures.oom)


def first_line(text: str, patterns: list[str]) -> str | None:
    """The log line of the first of ``patterns`` that matches (shortened), or None."""
    for pattern in patterns:
        match = re.search(pattern, text)
        if match:
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            return text[start:end if end >= 0 else None].strip()[:300]
    return None


def port_taken(log_text: str) -> bool:
    """Whether the engine failed because its port was taken (start it again on another)."""
    return PORT_TAKEN.search(log_text) is not None
