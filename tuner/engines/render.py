"""Render a configuration into an engine's command line and environment."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from tuner.engines.spec import Device, EngineSpec, Knob

Mode = Literal["process", "container"]


@dataclass(frozen=True)
class Rendered:
    """argv and the non-secret environment of one launch."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def command_line(self) -> str:
        """A shell line a person can paste (environment first)."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        return (env + " " if env else "") + shlex.join(self.argv)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) >= 1 else str(value)
    return str(value)


def knob_args(knob: Knob, value: Any, mode: Mode) -> tuple[list[str], dict[str, str]]:
    if value is None or value in knob.omit:
        return [], {}
    flag = (knob.container_flag or knob.flag) if mode == "container" else knob.flag
    if knob.style == "env":
        assert knob.env is not None
        return [], {knob.env: _text(value)}
    assert flag is not None
    if knob.style == "switch":
        return ([flag] if value else []), {}
    if knob.style == "pair":
        return ([flag] if value else [knob.off_flag or ""]), {}
    return [flag, _text(value)], {}


def config_args(spec: EngineSpec, config: dict[str, Any], device: Device, mode: Mode
                ) -> tuple[list[str], dict[str, str]]:
    """Flags and environment for the knobs in ``config``, plus the ``always`` knobs."""
    args: list[str] = []
    env: dict[str, str] = {}
    for name, knob in spec.knobs.items():
        if device not in knob.devices:
            continue
        if name in config:
            value = config[name]
        elif knob.always:
            value = knob.default_on(device)
        else:
            continue
        a, e = knob_args(knob, value, mode)
        args += a
        env.update(e)
    unknown = sorted(set(config) - set(spec.knobs))
    if unknown:
        raise KeyError(f"{spec.name} has no knob {unknown[0]!r}")
    return args, env


def render(spec: EngineSpec, config: dict[str, Any], *, device: Device, mode: Mode,
           values: dict[str, str]) -> Rendered:
    """The launch for ``config``; ``values`` fills the templates ({model}, {port}, ...)."""
    launch = spec.process if mode == "process" else spec.container
    if launch is None:
        raise KeyError(f"{spec.name} has no {mode} launch")
    base = [part.format(**values) for part in launch.argv]
    args, env = config_args(spec, config, device, mode)
    return Rendered(argv=base + args, env={**launch.env, **env})
