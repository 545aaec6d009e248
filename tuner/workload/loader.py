"""Load and validate a workload file."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tuner.errors import ConfigError
from tuner.validation import load_yaml, validate
from tuner.workload.models import Workload


def load_workload(path: Path) -> Workload:
    """Read ``path``; raise ConfigError with one line naming the field and the fix."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a workload is a YAML mapping with keys model, classes, "
                          "arrival, stop, slo and cost")
    return validate(Workload, data, str(path), context={"base_dir": path.parent})


def workload_sha256(path: Path) -> str | None:
    """The workload file's hash, recorded with every result measured on it."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
