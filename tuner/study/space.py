"""Search spaces (``search_spaces/<engine>.yaml``): the knobs to tune, as data.

Each knob has a type (int, float, bool, categorical) with its range or choices,
optional log scale, the devices it applies to, per-device choices or low ends, and a
condition (``when``: an expression over knobs sampled before it). The space
adapts to the host (:meth:`SearchSpace.for_host`): knobs for other devices go,
parallel sizes wider than a trial's share of the GPUs go, and tensor-parallel sizes
the model's heads cannot be split over go. ``constraints`` add validity rules to the
engine's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import optuna
from pydantic import Field, model_validator
from simpleeval import EvalWithCompoundTypes

from tuner.core import ConfigError, StrictModel, load_yaml, validate
from tuner.engines import Device, EngineSpec, Mode, ModelInfo, Rule, Scalar, all_devices, specs_root
from tuner.host import Hardware


class _Knob(StrictModel):
    devices: list[Device] = Field(default_factory=all_devices)
    when: str | None = Field(default=None, description="sample only when this is true")


class IntKnob(_Knob):
    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = 1
    at_most: Literal["cpu_cores"] | None = Field(
        default=None, description="cap `high` at this fact of the host")
    low_on: dict[Device, int] = Field(default_factory=dict, description=(
        "`low` on these devices: vLLM's token budget reaches down to 32 on a CPU, whose slow "
        "prefill needs small chunks, and starts at 256 on a GPU"))

    @model_validator(mode="after")
    def _range(self) -> IntKnob:
        for where, low in [("low", self.low), *((f"low_on.{d}", v)
                                                 for d, v in self.low_on.items())]:
            if low > self.high:
                raise ValueError(f"`{where} <= high` must hold, but got {where}={low}, "
                                 f"high={self.high}")
            if self.log and low < 1:
                raise ValueError(f"a log-scale knob needs {where} >= 1")
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high, log=self.log,
                                 step=1 if self.log else self.step)

    def contains(self, value: Any) -> bool:
        return isinstance(value, int) and self.low <= value <= self.high


class FloatKnob(_Knob):
    type: Literal["float"]
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> FloatKnob:
        if self.low > self.high:
            raise ValueError(f"`low <= high` must hold, but got low={self.low}, high={self.high}")
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def contains(self, value: Any) -> bool:
        return isinstance(value, int | float) and self.low <= value <= self.high


class BoolKnob(_Knob):
    type: Literal["bool"]

    def suggest(self, trial: optuna.Trial, name: str) -> bool:
        return bool(trial.suggest_categorical(name, [False, True]))

    def contains(self, value: Any) -> bool:
        return isinstance(value, bool)


class CategoricalKnob(_Knob):
    type: Literal["categorical"]
    choices: list[Scalar] = Field(min_length=1)
    choices_on: dict[Device, list[Scalar]] = Field(default_factory=dict)
    filter: Literal["tensor_parallel", "fits_gpus"] | None = Field(default=None, description=(
        "fits_gpus: sizes up to a trial's share of the GPUs (of the NUMA nodes on CPU); "
        "tensor_parallel: those that also split the model's heads"))

    def suggest(self, trial: optuna.Trial, name: str) -> Scalar:
        value = trial.suggest_categorical(name, self.choices)
        assert value is not None
        return value

    def contains(self, value: Any) -> bool:
        return value in self.choices


SpaceKnob = Annotated[IntKnob | FloatKnob | BoolKnob | CategoricalKnob,
                      Field(discriminator="type")]


class SearchSpace(StrictModel):
    engine: str
    description: str = ""
    knobs: dict[str, SpaceKnob]
    constraints: list[Rule] = Field(default_factory=list)

    def check_against(self, spec: EngineSpec) -> None:
        unknown = [k for k in self.knobs if k not in spec.knobs]
        if unknown:
            raise ConfigError(f"search space for {self.engine}: knob {unknown[0]!r} is not in "
                              f"engines/{spec.name}.yaml; add it there or remove it here")

    def for_host(self, hw: Hardware, model: ModelInfo, parallel: int = 1) -> SearchSpace:
        """The knobs that apply on this host, with choices that fit it when ``parallel`` trials
        run at once."""
        knobs: dict[str, SpaceKnob] = {}
        for name, knob in self.knobs.items():
            if hw.device not in knob.devices:
                continue
            if isinstance(knob, IntKnob) and knob.low_on:
                knob = knob.model_copy(update={"low": knob.low_on.get(hw.device, knob.low),
                                               "low_on": {}})
            if isinstance(knob, IntKnob) and knob.at_most == "cpu_cores":
                knob = knob.model_copy(update={"high": max(knob.low, min(knob.high,
                                                                         hw.engine_cores))})
            if isinstance(knob, CategoricalKnob):
                choices = knob.choices_on.get(hw.device, knob.choices)
                if knob.filter is not None:
                    limit = (max(1, hw.gpu_count // parallel) if hw.device == "gpu"
                             else hw.numa_nodes)
                    choices = [c for c in choices if isinstance(c, int) and 1 <= c <= limit
                               and (knob.filter != "tensor_parallel" or splits_heads(model, c))]
                if not choices:
                    continue
                knob = knob.model_copy(update={"choices": choices, "choices_on": {}})
            knobs[name] = knob
        return self.model_copy(update={"knobs": knobs})

    def for_mode(self, spec: EngineSpec, mode: Mode) -> SearchSpace:
        """Without the knobs this launch mode does not have (a container-only knob)."""
        knobs = {k: v for k, v in self.knobs.items() if mode in spec.knobs[k].modes}
        return self.model_copy(update={"knobs": knobs})

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """Define-by-run sampling in file order; ``when`` sees the knobs sampled so far."""
        config: dict[str, Any] = {}
        for name, knob in self.knobs.items():
            if knob.when is not None and not _holds(knob.when, config):
                continue
            config[name] = knob.suggest(trial, name)
        return config

    def legal_defaults(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """The engine defaults that are points of this space (and whose ``when`` holds over
        the defaults): what the defaults trial tells Optuna. A default outside the space, or
        ``None`` ("the engine decides"), is not a point Optuna could have chosen."""
        return {k: v for k, v in defaults.items() if k in self.knobs
                and self.knobs[k].contains(v)
                and (self.knobs[k].when is None or _holds(self.knobs[k].when, defaults))}

    def tell_defaults(self, trial: optuna.Trial, defaults: dict[str, Any]) -> dict[str, Any]:
        """Set on ``trial`` exactly the legal defaults (enqueued, so Optuna samples nothing)."""
        return {name: self.knobs[name].suggest(trial, name)
                for name in self.legal_defaults(defaults)}


def splits_heads(model: ModelInfo, tp: int) -> bool:
    """Whether ``tp`` ranks can share the model's attention: each takes heads / tp query heads,
    and the KV heads are either split (kv % tp == 0) or, with more ranks than KV heads,
    replicated (tp % kv == 0), as vLLM's QKVParallelLinear does (vllm/model_executor/layers/
    linear.py; SGLang's is the same). A size that divides the GPU count need not: TP 4 runs
    on 6 GPUs."""
    kv = model.kv_heads
    return model.attention_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)


def _holds(condition: str | None, names: dict[str, Any]) -> bool:
    try:
        return bool(EvalWithCompoundTypes(names=names).eval(condition))
    except TypeError:
        return False  # a condition over a knob the engine decides (None) does not hold


def space_file(path_or_engine: str | Path, root: Path | None = None) -> Path:
    """The search space's file: ``path_or_engine`` itself, or the engine's shipped space."""
    path = Path(path_or_engine)
    if not path.suffix:
        path = (root or specs_root()) / "search_spaces" / f"{path_or_engine}.yaml"
        if not path.is_file():
            raise ConfigError(f"no search space for engine {str(path_or_engine)!r}; give "
                              f"--search-space FILE or add {path}")
    return path


def load_search_space(path_or_engine: str | Path, root: Path | None = None) -> SearchSpace:
    path = space_file(path_or_engine, root)
    return validate(SearchSpace, load_yaml(path), str(path))
