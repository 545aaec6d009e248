"""An engine's command line read back into knob values: the configuration a user runs today
(``VLLM_CPU_KVCACHE_SPACE=8 vllm serve MODEL --max-num-seqs 64``), the inverse of
:func:`tuner.engines.render.knob_args`.

Every flag of the knobs in the engine's spec is read, in either spelling (process or
container), as ``--flag value`` or ``--flag=value``, switches and on/off pairs included, and
``NAME=value`` assignments before the command for the knobs that are environment variables.
Values are read back through the spec's own spellings (``on`` -> true, ``8`` -> q8_0) and typed
like the knob's default. The flags the tuner sets on every launch (the model, the served name,
host, port: those of the spec's launch command) are left to it. Anything else is an error that
names the flag: a flag the tuner does not know could change what the baseline measures.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from tuner.core import ConfigError
from tuner.engines.spec import EngineSpec, Knob, Scalar


@dataclass(frozen=True)
class _Reading:
    knob: str
    value: Scalar | None  # None: the flag takes the next token (or its ``=`` part)


def _flags(spec: EngineSpec) -> dict[str, list[_Reading]]:
    """Each flag and the knobs it sets: one, or several that share it (SGLang's
    ``--chunked-prefill-size`` is its size, and ``-1`` is chunking off)."""
    found: dict[str, list[_Reading]] = {}
    for name, knob in spec.knobs.items():
        readings: list[tuple[str | None, Scalar | None]] = []
        for flag in (knob.flag, knob.container_flag):
            if knob.style in ("switch", "pair"):
                readings.append((flag, True))
            elif knob.style == "off_switch":
                readings.append((flag, False))
            elif knob.style in ("value", "env"):
                readings.append((flag, None))
        if knob.style == "pair":
            readings.append((knob.off_flag, False))
        for flag, value in readings:
            if flag is not None and _Reading(name, value) not in found.get(flag, []):
                found.setdefault(flag, []).append(_Reading(name, value))
    return found


def _spelled(knob: Knob, text: str) -> bool:
    return any(text in spellings.values() for spellings in knob.values.values())


def _launch_flags(spec: EngineSpec) -> set[str]:
    """The flags of the spec's launch commands: the tuner sets them on every start."""
    argv = [*(spec.process.argv if spec.process else []),
            *(spec.container.argv if spec.container else [])]
    return {a for a in argv if a.startswith("-")}


def _typed(knob: Knob, text: str) -> Scalar:
    """``text`` as the engine spells it, back in the tuner's vocabulary and type (text where
    the knob's default is text on some device; else a truth value or a number if it is one)."""
    for spellings in knob.values.values():
        ours = next((k for k, v in spellings.items() if v == text), None)
        if ours is not None:
            text = ours
            break
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    defaults = knob.default.values() if isinstance(knob.default, dict) else [knob.default]
    if any(isinstance(d, str) for d in defaults):
        return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def knobs_from_command(spec: EngineSpec, text: str) -> dict[str, Scalar]:
    """The knob values of the command line ``text`` (one shell command; line continuations
    and comments allowed); a ConfigError naming a flag the tuner cannot read back."""
    try:
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError as exc:
        raise ConfigError(f"the command line does not parse as a shell command ({exc})") from exc
    envs = {k.env: name for name, k in spec.knobs.items() if k.style == "env" and k.env}
    flags, launch = _flags(spec), _launch_flags(spec)
    config: dict[str, Scalar] = {}
    i = 0
    while i < len(tokens) and "=" in tokens[i] and not tokens[i].startswith("-"):
        var, value = tokens[i].split("=", 1)
        if var in envs:
            config[envs[var]] = _typed(spec.knobs[envs[var]], value)
        i += 1
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-"):
            continue  # the program, its subcommand (serve), a positional model
        flag, has_value, inline = token.partition("=")
        if flag in launch:
            if not has_value and i < len(tokens) and not tokens[i].startswith("-"):
                i += 1
            continue
        readings = flags.get(flag)
        if not readings:
            raise ConfigError(f"{flag}: not a knob of {spec.name} the tuner knows; the knobs "
                              f"and their flags are in engines/{spec.name}.yaml")
        if readings[0].value is not None:
            config[readings[0].knob] = readings[0].value
            continue
        if not has_value:
            if i >= len(tokens):
                raise ConfigError(f"{flag}: the command line ends before its value")
            inline = tokens[i]
            i += 1
        # Of knobs that share the flag, the one that spells this value its own way, else the
        # one that spells none.
        name = next((r.knob for r in readings if _spelled(spec.knobs[r.knob], inline)),
                    next((r.knob for r in readings if not spec.knobs[r.knob].values),
                         readings[0].knob))
        config[name] = _typed(spec.knobs[name], inline)
    return config
