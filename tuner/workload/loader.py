"""Load and validate a workload file."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from tuner.core import ConfigError, load_yaml, validate
from tuner.workload.models import Workload
from tuner.workload.plausibility import implausible

log = logging.getLogger(__name__)
_WARNED: set[str] = set()  # a command that loads a workload twice warns once


def load_workload(path: Path) -> Workload:
    """Read ``path``; raise ConfigError with one line naming the field and the fix. Values
    that are valid but probably a mistake are logged as warnings (see ``plausibility``)."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a workload is a YAML mapping with keys model, classes, "
                          "arrival, stop, slo and cost")
    workload = validate(Workload, data, str(path), context={"base_dir": path.parent})
    for warning in implausible(workload):
        line = f"{path}: {warning}"
        if line not in _WARNED:
            _WARNED.add(line)
            log.warning("%s", line)
    return workload


def workload_sha256(path: Path) -> str | None:
    """The workload file's hash, recorded with every result measured on it."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
