"""Load and validate a workload file."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from tuner.config import describe_validation_error, load_yaml
from tuner.errors import ConfigError
from tuner.workload.models import Workload


def load_workload(path: Path) -> Workload:
    """Read ``path``; raise ConfigError with one line naming the field and the fix."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a workload is a YAML mapping with keys model, classes, "
                          "arrival, stop, slo and cost")
    try:
        return Workload.model_validate(data, context={"base_dir": path.parent})
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, str(path))) from exc
