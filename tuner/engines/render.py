"""Render a configuration into an engine's command line and environment."""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tuner.core import ConfigError
from tuner.engines.spec import Device, EngineSpec, Knob, Mode
from tuner.host import cpu_list, parse_cpu_list

UNISOLATED = {"master_port": "29500", "launch_id": "tuner"}
"""Template values a render without a launcher's (``launch.isolation.launch_values``) gets: a
command shown to a person, run alone."""
OPTIONS_FILE = "{options_file}"
"""Placeholder in argv for the options file; the launcher writes the file and substitutes it."""


@dataclass(frozen=True)
class Rendered:
    """argv, the non-secret environment and the options file of one launch."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    options: str | None = None
    cpus: str | None = field(default=None, metadata={
        "doc": "the cores the whole engine runs on (kernel list syntax); None: any"})

    def with_options_path(self, path: str) -> Rendered:
        return Rendered([path if a == OPTIONS_FILE else a for a in self.argv], self.env,
                        self.options, self.cpus)

    def write_options(self, beside: Path) -> Path:
        """Write the options file next to ``beside`` (the trial's log); return its path."""
        assert self.options is not None
        path = beside.with_suffix(".options.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.options)
        return path

    def command_line(self) -> str:
        """A shell line a person can paste (environment first)."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        pin = f"taskset -c {self.cpus} " if self.cpus else ""
        return (env + " " if env else "") + pin + shlex.join(self.argv)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) >= 1 else str(value)
    return str(value)


def knob_args(knob: Knob, value: Any, mode: Mode) -> tuple[list[str], dict[str, str]]:
    if value is None or value in knob.omit or mode not in knob.modes:
        return [], {}
    if knob.style in ("model_file", "option", "compute_cores"):
        return [], {}
    flag = (knob.container_flag or knob.flag) if mode == "container" else knob.flag
    text = knob.values.get(mode, {}).get(_text(value), _text(value))
    if knob.style == "off_switch":
        return ([] if value else [flag or ""]), {}
    if knob.style == "env":
        assert knob.env is not None
        return [], {knob.env: text}
    assert flag is not None
    if knob.style == "switch":
        return ([flag] if value else []), {}
    if knob.style == "pair":
        return ([flag] if value else [knob.off_flag or ""]), {}
    return [flag, text], {}


def model_file(spec: EngineSpec, config: dict[str, Any], device: Device, root: Path
               ) -> str | None:
    """The file (or folder) in the model folder ``root`` that a model_file knob selects."""
    for name, knob in spec.knobs.items():
        if knob.style != "model_file" or device not in knob.devices:
            continue
        value = config.get(name, knob.default_on(device) if knob.always else None)
        if value is None:
            continue
        assert knob.pattern is not None
        wanted = knob.pattern.format(value=value)
        hits = sorted(root.glob(wanted)) if root.is_dir() else []
        if not hits:
            raise ConfigError(f"{name}={value}: no {wanted!r} in the model folder {root}; make "
                              "that variant or drop it from the search space")
        return hits[0].name
    return None


def _active(spec: EngineSpec, config: dict[str, Any], device: Device
            ) -> list[tuple[Knob, Any]]:
    out = []
    for name, knob in spec.knobs.items():
        if device not in knob.devices:
            continue
        if name in config:
            out.append((knob, config[name]))
        elif knob.always:
            out.append((knob, knob.default_on(device)))
    unknown = sorted(set(config) - set(spec.knobs))
    if unknown:
        raise KeyError(f"{spec.name} has no knob {unknown[0]!r}")
    return out


def config_args(spec: EngineSpec, config: dict[str, Any], device: Device, mode: Mode
                ) -> tuple[list[str], dict[str, str]]:
    """Flags and environment for the knobs in ``config``, plus the ``always`` knobs."""
    args: list[str] = []
    env: dict[str, str] = {}
    for knob, value in _active(spec, config, device):
        a, e = knob_args(knob, value, mode)
        args += a
        env.update(e)
    return args, env


def options_yaml(spec: EngineSpec, config: dict[str, Any], device: Device) -> str | None:
    """The engine's options file for the option knobs in ``config`` (None: no such knob)."""
    tree: dict[str, Any] = {}
    for knob, value in _active(spec, config, device):
        if knob.style != "option" or value is None or value in knob.omit:
            continue
        assert knob.path is not None
        node = tree
        *parents, leaf = knob.path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return yaml.safe_dump(tree, sort_keys=True) if tree else None


def cpu_binding(spec: EngineSpec, cpus: str | None, other_cpus: str | None = None,
                config: dict[str, Any] | None = None, mode: Mode = "process"
                ) -> tuple[dict[str, str], str | None]:
    """The environment that binds the engine's compute threads to ``cpus``, and the cores the
    engine's process is confined to (None: not confined), as the spec's ``cpu_binding`` says:
    ``cpus`` with ``affinity``; with ``helpers_apart``, ``other_cpus`` (the host's other
    cores), where its helpers run while the environment binds its compute threads. A
    ``compute_cores`` knob in ``config`` below the share's size binds the compute threads to
    the share's first cores, and a process's helpers run on the rest of the share (a
    container's stay anywhere in its cpuset, the whole share)."""
    binding = spec.cpu_binding
    if not cpus or binding is None:
        return {}, None
    compute, rest = split_share(spec, cpus, config or {})
    env = {k: v.format(cpus=compute) for k, v in binding.env.items()}
    if mode == "container":
        rest = None
    if binding.helpers_apart and (rest or other_cpus):
        return env, rest or other_cpus
    return env, cpus if binding.affinity else None


def split_share(spec: EngineSpec, cpus: str, config: dict[str, Any]) -> tuple[str, str | None]:
    """The engine's share ``cpus`` as its compute cores and the rest (None: no rest), by the
    configuration's ``compute_cores`` knob (unset: every core computes)."""
    wanted = next((config.get(name) for name, k in spec.knobs.items()
                   if k.style == "compute_cores"), None)
    share = sorted(parse_cpu_list(cpus))
    if wanted is None or int(wanted) >= len(share):
        return cpus, None
    n = max(1, int(wanted))
    return cpu_list(share[:n]), cpu_list(share[n:])


def core_threads(spec: EngineSpec, config: dict[str, Any], cpus: str | None, mode: Mode
                 ) -> list[str]:
    """The thread-count flag of an engine confined to ``cpus`` whose configuration leaves it
    unset (``cpu_binding.threads_knob``): one thread per core of its share."""
    name = spec.cpu_binding.threads_knob if spec.cpu_binding else None
    if not cpus or name is None or config.get(name) is not None:
        return []
    return knob_args(spec.knobs[name], len(parse_cpu_list(cpus)), mode)[0]


def render(spec: EngineSpec, config: dict[str, Any], *, device: Device, mode: Mode,
           values: dict[str, str], model_root: Path | None = None,
           cpus: str | None = None, other_cpus: str | None = None) -> Rendered:
    """The launch for ``config``; ``values`` fills the templates ({model}, {port}, ...).
    ``model_root`` is the model folder on this host, where a model_file knob picks its file;
    ``cpus`` the engine's share of a CPU host's cores (kernel list syntax), or None;
    ``other_cpus`` the rest of them, for an engine whose helpers run apart (a process
    only: inside a container's cpuset the compute threads could not be bound outside it)."""
    launch = spec.process if mode == "process" else spec.container
    if launch is None:
        raise KeyError(f"{spec.name} has no {mode} launch")
    values = {**UNISOLATED, **values}
    chosen = model_file(spec, config, device, model_root or Path(values["model"]))
    if chosen is not None:
        values = {**values, "model": posixpath.join(values["model"], chosen)}
    base = [part.format(**values) for part in launch.argv]
    args, env = config_args(spec, config, device, mode)
    options = options_yaml(spec, config, device)
    if options is not None and spec.options_file is not None:
        args += [spec.options_file.flag, OPTIONS_FILE]
    bind_env, confined = cpu_binding(spec, cpus, other_cpus, config, mode)
    args += core_threads(spec, config, cpus, mode)
    return Rendered(argv=base + args, env={**launch.env, **env, **bind_env}, options=options,
                    cpus=confined)
