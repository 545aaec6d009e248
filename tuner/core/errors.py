"""The one exception tree of the project.

Every error a user can see derives from :class:`TunerError` and carries the exit code the CLI
ends with: :class:`ConfigError` (and its children) 2, everything else 1.
Errors from Docker, httpx and MLflow are translated at module boundaries with
``raise ... from exc`` so that callers only ever handle these types.
"""

from __future__ import annotations

EXIT_INTERRUPTED = 130
EXIT_NO_GAIN = 4
"""A comparison resolved: the configuration does not beat the other by more than the
resolution (equivalent, or worse)."""
EXIT_UNRESOLVED = 5
"""A comparison not decided at its resolution within its budget."""


def study_exit_code(verdict_kind: str | None) -> int:
    """``tune --verdict-exit``'s code for a study's verdict against the defaults: 0 a win,
    EXIT_NO_GAIN nothing to gain, EXIT_UNRESOLVED unresolved or no verdict at all."""
    return {"win": 0, "no_gain": EXIT_NO_GAIN}.get(verdict_kind or "", EXIT_UNRESOLVED)


class TunerError(Exception):
    """Base class: a failure the tool reports in one line."""

    cli_exit_code = 1


class ConfigError(TunerError):
    """Bad input: a workload, spec, search space or option is wrong. Exit code 2."""

    cli_exit_code = 2


class EndpointError(ConfigError):
    """The endpoint is unreachable, not OpenAI-compatible, or does not serve the model."""


class SlosNotMet(TunerError):
    """The run measured, and no load it measured met the workload's SLOs. Exit code 3."""

    cli_exit_code = 3


class EngineError(TunerError):
    """An engine failed to start or died."""


class EngineStartError(EngineError):
    """The engine exited or timed out before it was ready."""

    def __init__(self, message: str, *, outcome: str, exit_code: int | None, log_tail: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.exit_code = exit_code
        self.log_tail = log_tail


class EngineCrashed(EngineError):
    """The engine died while it was serving load."""


class StudyError(TunerError):
    """The study storage or tracking store failed."""


class EngineHung(EngineError):
    """The engine's process lives but it stopped answering: no token on any request and no
    answer from its health check for the workload's ``hang_timeout_s``."""


class OutOfSpace(StudyError):
    """The disk holding the run folder (or a SQLite storage in it) is full: the study stops."""
