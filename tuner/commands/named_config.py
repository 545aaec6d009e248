"""A configuration named on the command line (``--config``, ``--against``): one grammar for
every option that names one.

- ``defaults``: the engine's own defaults (no knob set);
- a YAML file of knob values in the tuner's vocabulary (``max_batch_size: 64``);
- a study's ``best_config.yaml``;
- a file ``tune export`` wrote (its first line names the trial and its knobs);
- a file holding the engine's command line as the user runs it
  (``vllm serve MODEL --max-num-seqs 64``), read with the flags of the engine's spec
  (:mod:`tuner.engines.command_line`).

A study's trial (``--study-dir`` and ``--trial``) names one too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tuner.core import ConfigError
from tuner.engines import (
    EngineSpec,
    ModelInfo,
    broken_rules,
    knobs_from_command,
    load_engine_spec,
    rule_names,
)
from tuner.host import Hardware
from tuner.study import RunFolder, TrialResult

EXPORT_HEADER = re.compile(r"^# tune export: study .*, trial (\d+) \((.*)\)$")
"""The first line of every file ``tune export`` writes (tuner/deploy/chosen.py, header)."""


@dataclass(frozen=True)
class NamedConfig:
    """The knobs of a named configuration, whether it is the engine's defaults, and the name
    every output gives it."""

    name: str
    knobs: dict[str, Any]
    defaults: bool


DEFAULTS = NamedConfig("defaults", {}, True)


def named_config(given: str, spec: EngineSpec, *, flag: str = "--config") -> NamedConfig:
    """The configuration ``given`` names (``defaults`` or a file); a ConfigError that names
    ``flag`` and what is wrong."""
    if given == "defaults":
        return DEFAULTS
    path = Path(given)
    if not path.is_file():
        raise ConfigError(f"{flag} {given}: no such file; give 'defaults', a YAML file of knob "
                          "values, a study's best_config.yaml, a file tune export wrote, or "
                          "the engine's command line in a file")
    text = path.read_text(errors="replace")
    config = _read(text, spec, f"{flag} {given}")
    unknown = sorted(set(config.knobs) - set(spec.knobs))
    if unknown:
        raise ConfigError(f"{flag} {given}: {spec.name} has no knob {unknown[0]!r}; the knobs "
                          f"are in engines/{spec.name}.yaml")
    return NamedConfig("defaults" if config.defaults else path.stem, config.knobs,
                       config.defaults)


def baseline_of(given: str | None, engine: str) -> dict[str, Any] | None:
    """``tune --baseline FILE``: the user's current configuration, named after its file."""
    if given is None:
        return None
    found = named_config(given, load_engine_spec(engine), flag="--baseline")
    if found.defaults:
        raise ConfigError(f"--baseline {given}: names the engine's defaults, which every study "
                          "measures; give the configuration you run today, or leave it out")
    return {"name": found.name, "knobs": found.knobs}


def check_config(knobs: dict[str, Any], flag: str, spec: EngineSpec, hardware: Hardware,
                 model: ModelInfo, max_request_tokens: int) -> None:
    """A ConfigError naming ``flag`` when ``knobs`` names a knob the engine does not have or
    breaks a rule of its spec on this host and model (the engine would refuse to start)."""
    unknown = sorted(set(knobs) - set(spec.knobs))
    if unknown:
        raise ConfigError(f"{flag}: {spec.name} has no knob {unknown[0]!r}; the knobs are in "
                          f"engines/{spec.name}.yaml")
    names = rule_names(spec, knobs, hardware, model, max_request_tokens)
    for rule in broken_rules(spec.rules, names)[:1]:
        raise ConfigError(f"{flag}: breaks rule {rule.name} of engines/{spec.name}.yaml: "
                          f"{rule.message}")


def trial_config(study_dir: Path | None, trial: int) -> NamedConfig:
    """The configuration of a study's finished trial."""
    if study_dir is None:
        raise ConfigError("--trial needs --study-dir, the folder of the study it is from")
    path = RunFolder(study_dir).trial(trial)
    if not path.is_file():
        raise ConfigError(f"{path} not found: give a trial number the study has finished")
    found = TrialResult.model_validate_json(path.read_text())
    return NamedConfig(f"trial {trial}", {} if found.defaults else found.config,
                       found.defaults)


def _read(text: str, spec: EngineSpec, where: str) -> NamedConfig:
    for line in text.lstrip().splitlines():  # the header, among the comments that lead
        if not line.startswith("#"):
            break
        header = EXPORT_HEADER.match(line)
        if header is not None:
            return _exported(header.group(2), where)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        if isinstance(data.get("config"), dict):  # a best_config.yaml a study wrote
            chosen = bool(data.get("defaults"))
            return NamedConfig("", {} if chosen else data["config"], chosen)
        return NamedConfig("", data, False)
    if not text.strip():
        raise ConfigError(f"{where}: the file is empty")
    try:
        knobs = knobs_from_command(spec, text)
    except ConfigError as exc:
        raise ConfigError(f"{where}: read as {spec.name}'s command line: {exc}") from None
    return NamedConfig("", knobs, False)


def _exported(listed: str, where: str) -> NamedConfig:
    """The knobs a ``tune export`` header lists (``k=v, k=v``, values as Python prints them,
    or the engine's defaults)."""
    if listed == "the engine's defaults":
        return NamedConfig("", {}, True)
    knobs: dict[str, Any] = {}
    for item in listed.split(", "):
        name, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"{where}: the tune export line lists {item!r}, not knob=value")
        knobs[name] = _printed(value)
    return NamedConfig("", knobs, False)


def _printed(value: str) -> Any:
    """A value as Python's ``str`` printed it: a truth value, a number, or text."""
    if value in ("True", "False"):
        return value == "True"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value
