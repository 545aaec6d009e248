"""Validate input into a config model, or explain what is wrong in one line.

Every config model derives from :class:`StrictModel` (unknown keys are errors); every
validation of user input goes through :func:`validate`, and every YAML file through
:func:`load_yaml`, so a mistake is always one ``ConfigError`` line naming the field.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from tuner.core.errors import ConfigError
from tuner.core.validation_errors import describe_validation_error


class StrictModel(BaseModel):
    """Base model that rejects unknown keys and freezes instances."""

    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, source: str,
             context: dict[str, Any] | None = None) -> M:
    """``model`` from ``data``, or a one-line ConfigError that starts with ``source``."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source, model)) from exc


def load_yaml(path: Path) -> Any:
    """Read a YAML file, turning I/O and syntax errors into one-line ConfigErrors."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: file not found") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: is a folder; give a YAML file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); give a YAML file "
                          "saved as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return copy.deepcopy(_parsed(text))  # a copy: the caller may change what it got
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise ConfigError(f"{path}: malformed YAML{where}: {problem}") from exc


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Any:
    """``text`` parsed, once per text: the engine specs, search spaces and workloads are read
    again and again (each trial context, each check), and PyYAML's pure-Python parser takes
    30 ms for engines/vllm.yaml where a copy of what it made takes 0.3 ms. (libyaml's parser
    is not used: it accepts and reads some files differently, and says less of what is wrong.)
    An error is not kept: the same text is parsed again, and fails the same way."""
    return yaml.safe_load(text)


RESOLUTION = 0.05
"""The relative difference a capacity search and a verdict resolve to unless told otherwise
(the workload's ``capacity.resolution``, ``--resolution``): ±5%."""


def parse_resolution(text: str, flag: str = "--resolution") -> float:
    """A resolution given on the command line (a relative difference in (0, 0.5)), or a
    one-line error naming the flag and what to give."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 0.5:
        raise ConfigError(f"{flag} {text}: give a relative difference between 0 and 0.5, such "
                          "as 0.05 for ±5%")
    return value
