"""Configurations to try first (``--enqueue FILE``, ``--warm-start``), checked before a study
starts: each a mapping of the engine's knobs, each value one the search space can take for
that knob. A mistake is one line naming the entry, the knob and the fix, not a study that
stops at the trial that reaches it."""

from __future__ import annotations

import difflib
from typing import Any

from tuner.core import ConfigError
from tuner.engines import EngineSpec
from tuner.study.space import (
    BoolKnob,
    CategoricalKnob,
    FloatKnob,
    IntKnob,
    SearchSpace,
    SpaceKnob,
)


def check_enqueued(configs: list[dict[str, Any]], spec: EngineSpec, space: SearchSpace,
                   source: str = "--enqueue") -> None:
    """Raise a ConfigError for the first entry of ``configs`` that is not a configuration of
    ``spec`` the space ``space`` can hold."""
    for i, config in enumerate(configs):
        if not isinstance(config, dict):
            raise ConfigError(f"{source}: [{i}]: a mapping of knob values, not "
                              f"{type(config).__name__}")
        for key, value in config.items():
            where = f"{source}: [{i}].{key}"
            if not isinstance(key, str) or key not in spec.knobs:
                close = difflib.get_close_matches(str(key), list(spec.knobs), n=1)
                fix = (f"did you mean `{close[0]}`?" if close
                       else f"the knobs are in engines/{spec.name}.yaml")
                raise ConfigError(f"{where}: not a knob of {spec.name}; {fix}")
            knob = space.knobs.get(key)
            if knob is not None and value is not None and not takes(knob, value):
                raise ConfigError(f"{where}: {value!r} is not {kind_of(knob)}; give one (or "
                                  "leave the knob out)")


def takes(knob: SpaceKnob, value: Any) -> bool:
    """Whether the knob's distribution can hold ``value`` (its range aside: Optuna takes an
    enqueued value outside it)."""
    if isinstance(knob, BoolKnob):
        return isinstance(value, bool)
    if isinstance(knob, IntKnob):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(knob, FloatKnob):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return value in knob.choices


def kind_of(knob: SpaceKnob) -> str:
    if isinstance(knob, CategoricalKnob):
        return "one of " + ", ".join(repr(c) for c in knob.choices)
    return {"bool": "true or false", "int": "an integer", "float": "a number"}[knob.type]
