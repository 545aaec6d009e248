"""Files a workload names (a tokenizer, a trace, observed lengths): relative to the workload
file, which the loader passes as the validation context's ``base_dir``."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationInfo


def beside_workload(value: Path, info: ValidationInfo) -> Path:
    """``value`` as given when absolute (or when no workload file is known), else next to it."""
    base = (info.context or {}).get("base_dir")
    return value if value.is_absolute() or base is None else Path(base) / value


def workload_file(value: Path, info: ValidationInfo, what: str) -> Path:
    """A file the workload needs; one line naming it when it is not there."""
    path = beside_workload(value, info)
    if not path.is_file():
        raise ValueError(f"{what} file {path} does not exist; give a path relative to the "
                         "workload file")
    return path
