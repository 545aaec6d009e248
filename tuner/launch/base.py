"""The launcher seam: start an engine, tell whether it lives, read its log, stop it.

Contract (one suite checks it, ``tests/contracts/launcher.py``: run against the fake and
process launchers by ``tests/contracts/test_launcher_fake_process.py``, against the Docker
launcher by ``tests/contracts/test_launcher_docker.py``):

- ``start(request)`` returns an :class:`EngineHandle` at once; it does not wait
  for readiness (``tuner.launch.readiness.wait_ready`` does, watching the handle).
- The handle owns the engine: ``stop()`` always works, is idempotent, and leaves no
  process or container behind (SIGTERM, a grace period, then SIGKILL).
- ``exit_code()`` is None while the engine runs. ``log_tail()`` works before,
  during and after the run; the full log is at ``log_path``.
- Handles are used from one thread. Nothing secret is in ``describe()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import SecretStr

from tuner.engines import EngineSpec, Rendered


@dataclass(frozen=True)
class LaunchRequest:
    """Everything a launcher needs to start one engine for one trial."""

    spec: EngineSpec
    config: dict[str, Any]
    model: str
    served_name: str
    log_path: Path
    labels: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, SecretStr] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    """The trial's GPUs by UUID (``GpuLease.devices``); empty: a CPU trial."""
    cpus: str | None = None
    """The engine's cores on a CPU host split with the load generator (``0-5``); None: all."""


class EngineHandle(ABC):
    """A started engine."""

    base_url: str
    log_path: Path
    rendered: Rendered
    health_lead_s: float | None = None
    """How long its health endpoint answered 200 before it served a completion, between the
    two readiness polls (0: not before); None until ``wait_ready`` saw it ready."""
    metric_families: int | None = None
    """The Prometheus metric families its metrics endpoint exposed once ready (None: it has
    none, or it did not answer)."""

    @abstractmethod
    def exit_code(self) -> int | None:
        """None while the engine runs; its exit status once it has ended."""

    @abstractmethod
    def stop(self, grace_s: float = 20.0) -> None:
        """Stop the engine and everything it started. Idempotent."""

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    @property
    def metrics_url(self) -> str | None:
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time the engine has used so far, all its processes (None: not known here). A
        busy engine uses it; a stopped or deadlocked one does not (``launch.liveness``)."""
        return None

    def describe(self) -> dict[str, Any]:
        """What to record about this launch (no secrets)."""
        return {"command": self.rendered.command_line()}


class Launcher(Protocol):
    name: str

    def start(self, request: LaunchRequest) -> EngineHandle: ...

    def cleanup_orphans(self) -> list[str]:
        """Remove engines of ours whose tuner is gone; return what was removed."""
        ...

    def cleanup_own(self) -> list[str]:
        """Remove every engine this process started that is still there (the last step of
        every run, whatever ended it: a safety net under the per-trial teardown)."""
        ...
