"""Configurations to try first (``--enqueue FILE``, ``--warm-start``), checked before a study
starts: each a mapping of the engine's knobs, each value one the search space can take for
that knob. A mistake is one line naming the entry, the knob and the fix, not a study that
stops at the trial that reaches it."""

from __future__ import annotations

import difflib
from collections.abc import Callable
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
        check_knobs(config, spec, space, f"{source}: [{i}].", takes)


def check_baseline(knobs: dict[str, Any], spec: EngineSpec, space: SearchSpace) -> None:
    """Raise a ConfigError for the first knob of the user's current configuration (``tune
    --baseline``) that ``spec`` does not have or whose value is not of the kind the knob
    takes; a value the space does not offer is the user's to run."""
    check_knobs(knobs, spec, space, "--baseline: ", same_kind)


def check_knobs(config: dict[str, Any], spec: EngineSpec, space: SearchSpace, where: str,
                fits: Callable[[SpaceKnob, Any], bool]) -> None:
    for key, value in config.items():
        at = f"{where}{key}"
        if not isinstance(key, str) or key not in spec.knobs:
            close = difflib.get_close_matches(str(key), list(spec.knobs), n=1)
            fix = (f"did you mean `{close[0]}`?" if close
                   else f"the knobs are in engines/{spec.name}.yaml")
            raise ConfigError(f"{at}: not a knob of {spec.name}; {fix}")
        knob = space.knobs.get(key)
        if knob is not None and value is not None and not fits(knob, value):
            raise ConfigError(f"{at}: {value!r} is not {kind_of(knob)}; give one (or "
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


def same_kind(knob: SpaceKnob, value: Any) -> bool:
    """Whether ``value`` is of the kind the knob takes: a truth value, a number, or for a
    knob of named choices, text (a value the space does not offer, an engine may take)."""
    if not isinstance(knob, CategoricalKnob) or value in knob.choices:
        return takes(knob, value)
    kinds = {type(c) for c in knob.choices}
    if kinds <= {int, float}:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str) and kinds == {str}


def kind_of(knob: SpaceKnob) -> str:
    if isinstance(knob, CategoricalKnob):
        return "one of " + ", ".join(repr(c) for c in knob.choices)
    return {"bool": "true or false", "int": "an integer", "float": "a number"}[knob.type]
