"""Engine specs: how to run an engine, as data (``engines/<name>.yaml``).

A spec says how each knob of the common vocabulary renders (a flag with a value,
a switch, a pair of on/off flags, or an environment variable), the engine's own
default for it, how to launch the engine as a process or a container, how to
tell it is ready, where its metrics are, which log lines mean "out of memory"
or "invalid configuration", the validity rules a configuration must obey, and
how many accelerators a configuration uses.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from tuner.core import ConfigError, StrictModel, load_yaml, validate

Device = Literal["cpu", "gpu"]
Mode = Literal["process", "container"]
Scalar = bool | int | float | str


def all_devices() -> list[Device]:
    return ["cpu", "gpu"]


def all_modes() -> list[Mode]:
    return ["process", "container"]


class Knob(StrictModel):
    """How one knob renders on the engine's command line or environment."""

    flag: str | None = Field(default=None, description="e.g. --max-num-seqs")
    container_flag: str | None = Field(
        default=None, description="the flag in the container image when it differs")
    style: Literal["value", "switch", "off_switch", "pair", "env", "model_file",
                   "option", "compute_cores"] = "value"
    off_flag: str | None = Field(default=None, description="for style pair: the 'off' flag")
    env: str | None = Field(default=None, description="for style env: the variable")
    pattern: str | None = Field(default=None, description="for style model_file: the file (or "
                                "folder) in the model folder, e.g. '*-{value}.gguf'")
    path: str | None = Field(default=None, description="for style option: the dotted key in "
                             "the engine's options file, e.g. kv_cache_config.dtype")
    values: dict[Mode, dict[str, str]] = Field(
        default_factory=dict, description="how a value is written, per launch mode, when the "
        "engine's spelling differs (e.g. q8_0 -> 8, true -> on)")
    modes: list[Mode] = Field(default_factory=all_modes,
                              description="launch modes that have this knob")
    omit: list[Scalar] = Field(default_factory=list,
                               description="values that render as nothing (engine default)")
    default: Scalar | None | dict[Device, Scalar | None] = Field(
        default=None, description="the engine's own default, per device when it differs")
    devices: list[Device] = Field(default_factory=all_devices)
    unit: str | None = None
    always: bool = Field(default=False, description="render even for the defaults trial: the "
                         "engine has no fixed default when it is unset")
    lossy: bool = Field(default=False, description="a value other than the default can "
                        "change the model's answers (quantisation, a quantised KV cache, "
                        "speculative decoding): checked against the defaults' answers when "
                        "the workload asks for it (`quality`)")
    description: str = ""

    @model_validator(mode="after")
    def _shape(self) -> Knob:
        if self.style == "env" and not self.env:
            raise ValueError("style env needs `env`")
        if self.style == "model_file" and not self.pattern:
            raise ValueError("style model_file needs `pattern`")
        if self.style == "option" and not self.path:
            raise ValueError("style option needs `path`")
        if self.style not in ("env", "model_file", "option", "compute_cores") and not self.flag:
            raise ValueError(f"style {self.style} needs `flag`")
        if self.style == "pair" and not self.off_flag:
            raise ValueError("style pair needs `off_flag`")
        return self

    def default_on(self, device: Device) -> Scalar | None:
        if isinstance(self.default, dict):
            return self.default.get(device)
        return self.default


class OptionsFile(StrictModel):
    """An engine that takes some knobs from a YAML file (TensorRT-LLM's extra options)."""

    flag: str
    container_path: str = "/tuner/options.yaml"


class ProcessLaunch(StrictModel):
    """A local process. Templates: {python} {model} {served_name} {port} {host}, and per launch
    {master_port} {launch_id} (``launch.isolation``)."""

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    cache_env: dict[str, str] = Field(
        default_factory=dict, description="variable -> cache name: on a GPU host the variable "
        "points at the GPU lease's own folder of that cache (launch.isolation.cache_folder)")
    version_argv: list[str] = Field(
        default_factory=list, description="for an engine that is a program, not a Python "
        "package: the command that prints its version (``llama-server --version``)")
    requires: list[str] = Field(
        default_factory=list, description="Python modules the engine's process imports: one "
        "missing from {python}'s environment is bad input, before any trial, naming `install`")
    install: str = Field(default="", description="how to install what `requires` names")


class ContainerLaunch(StrictModel):
    """A container from the engine's image. The same templates as the process argv."""

    image: str
    tag: str = "latest"
    cpu_image: str | None = None
    cpu_tag: str | None = None
    entrypoint: list[str] | None = None
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    shm_size: str | None = None
    ipc_host: bool = False
    ulimits: dict[str, int] = Field(default_factory=dict)
    model_mount: str = "/models/model"
    cache_mounts: dict[str, str] = Field(
        default_factory=dict, description="cache name -> path in the container")
    run_as_user: bool = Field(
        default=False, description="the image runs as any user: run it as the tuner's user, "
        "so that files it writes in mounted host folders are not root's")


class Readiness(StrictModel):
    health_path: str = "/health"
    lists_model: bool = Field(default=True, description="the model list (/v1/models) names "
                              "the served model; false: a completion for it is the proof "
                              "(transformers serve lists its hub cache, not a forced folder)")
    timeout_s: float = Field(default=900.0, gt=0)
    poll_s: float = Field(default=1.0, gt=0)


class CpuBinding(StrictModel):
    """How an engine is kept on its own cores of a CPU host, off the load generator's. Without
    it the engine runs on every core (and the record says it was not pinned)."""

    env: dict[str, str] = Field(default_factory=dict, description="variables that bind the "
                                "engine's compute threads; {cpus} is the engine's core list")
    affinity: bool = Field(default=False, description="run the whole engine on its cores "
                           "(the process's CPU affinity, a container's cpuset)")
    threads_knob: str | None = Field(
        default=None, description="the knob that counts the engine's compute threads, set to "
        "the number of the engine's cores when a configuration leaves it unset: the engine's "
        "own default counts the host's cores, not the ones it is confined to, and would put "
        "several threads on each of its cores")
    helpers_apart: bool = Field(default=False, description="a process engine's other "
                                "processes and threads (API server, scheduler) run on the "
                                "host's other cores, never on the compute cores that ``env`` "
                                "binds; without it they run anywhere, and the kernel may put "
                                "them beside the compute threads")

    @model_validator(mode="after")
    def _one_placement(self) -> CpuBinding:
        if self.affinity and self.helpers_apart:
            raise ValueError("affinity (the whole engine on its cores) and helpers_apart (its "
                             "helpers on the other cores) exclude each other; choose one")
        return self


class Failures(StrictModel):
    """Regular expressions over the engine log."""

    oom: list[str] = Field(default_factory=list)
    invalid_config: list[str] = Field(default_factory=list)


class Rule(StrictModel):
    """A configuration is invalid when ``invalid_when`` is true. Names: knob values, ``device``,
    ``gpus``, ``numa_nodes``, ``memory_gib``, ``attention_heads``, ``kv_heads``,
    ``effective_max_model_len`` (the knob, or the model's own) and ``workload_max_tokens``
    (the longest request of the workload)."""

    name: str
    invalid_when: str
    message: str
    source: str = ""


class EngineSpec(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    display_name: str
    distributions: list[str] = Field(default_factory=list,
                                     description="Python packages whose version is the engine's")
    maintenance: str = Field(default="maintained", description="the engine's maintenance "
                             "status as its maker states it (the comparison shows it)")
    process: ProcessLaunch | None = None
    container: ContainerLaunch | None = None
    readiness: Readiness = Readiness()
    metrics_path: str | None = "/metrics"
    forces_output_length: bool = Field(default=True, description="the engine honours "
                                       "min_tokens/ignore_eos; false: figures use real counts")
    serves_model_path: bool = Field(default=False, description="the engine has no option "
                                    "naming the served model: requests name it by the model "
                                    "as the engine was started with it ({model})")
    options_file: OptionsFile | None = None
    cpu_binding: CpuBinding | None = None
    failures: Failures = Failures()
    knobs: dict[str, Knob]
    rules: list[Rule] = Field(default_factory=list)
    accelerators: list[str] = Field(
        default_factory=list, description="knobs whose product is the accelerators a config uses")

    @model_validator(mode="after")
    def _refs(self) -> EngineSpec:
        missing = [k for k in self.accelerators if k not in self.knobs]
        if missing:
            raise ValueError(f"accelerators name unknown knobs {missing}")
        if self.process is None and self.container is None:
            raise ValueError("give `process` or `container` (or both)")
        if self.options_file is None and any(k.style == "option" for k in self.knobs.values()):
            raise ValueError("knobs of style option need `options_file`")
        if any(k.style == "compute_cores" for k in self.knobs.values()) and not (
                self.cpu_binding and self.cpu_binding.env and self.cpu_binding.helpers_apart):
            raise ValueError("a knob of style compute_cores needs cpu_binding with `env` (what "
                             "binds the compute threads) and helpers_apart")
        threads = self.cpu_binding.threads_knob if self.cpu_binding else None
        if threads is not None and threads not in self.knobs:
            raise ValueError(f"cpu_binding.threads_knob names an unknown knob {threads!r}")
        return self

    def defaults(self, device: Device) -> dict[str, Any]:
        return {name: k.default_on(device) for name, k in self.knobs.items()
                if device in k.devices}

    def lossy_changes(self, config: dict[str, Any], device: Device) -> dict[str, Any]:
        """The knobs of ``config`` marked lossy whose value is not the engine's default on
        ``device`` (a knob left out, or ``None``, is the default)."""
        return {name: value for name, value in config.items()
                if name in self.knobs and self.knobs[name].lossy and value is not None
                and value != self.knobs[name].default_on(device)}

    def accelerators_used(self, config: dict[str, Any], device: Device = "gpu") -> int:
        """The GPUs a configuration takes (the product of its ``accelerators`` knobs); on a
        CPU host one, the host: tensor parallelism over its NUMA nodes rents nothing more."""
        if device == "cpu":
            return 1
        n = 1
        for name in self.accelerators:
            value = config.get(name)
            n *= int(value) if value else 1
        return n


def specs_root() -> Path:
    """The folder holding ``engines/`` and ``search_spaces/``: the package's data, which in a
    source tree (and an editable install) links to the repository's top-level folders, the
    source of truth, and in a wheel is a copy of them."""
    return Path(str(files("tuner") / "data"))


def engine_names(root: Path | None = None) -> list[str]:
    return sorted(p.stem for p in ((root or specs_root()) / "engines").glob("*.yaml"))


@cache
def load_engine_spec(name: str, root: Path | None = None) -> EngineSpec:
    path = (root or specs_root()) / "engines" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown engine {name!r}; choose one of: "
                          f"{', '.join(engine_names(root))}")
    return parse_engine_spec(path)


def parse_engine_spec(path: Path) -> EngineSpec:
    return validate(EngineSpec, load_yaml(path), str(path))
