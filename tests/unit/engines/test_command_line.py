"""An engine's command line read back into knob values: what the tuner renders for any value
of any searched knob, of every engine, in either launch mode, reads back as that value; a
user's own command (env assignments, `--flag=value`, line continuations, the launch flags the
tuner sets itself) gives its knobs; a flag the tuner does not know is one error naming it."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from tuner.core import ConfigError
from tuner.engines.command_line import knobs_from_command
from tuner.engines.render import knob_args
from tuner.engines.spec import Mode, engine_names, load_engine_spec
from tuner.study import CategoricalKnob, load_search_space


def values_of(knob: Any) -> list[Any]:
    if isinstance(knob, CategoricalKnob):
        return [*knob.choices, *(v for vs in knob.choices_on.values() for v in vs)]
    if knob.type == "bool":
        return [False, True]
    return [knob.low, knob.high, *getattr(knob, "low_on", {}).values()]  # int and float


def cases() -> list[tuple[str, Mode, str, Any]]:
    out = []
    for engine in engine_names():
        spec = load_engine_spec(engine)
        for name, knob in load_search_space(engine).knobs.items():
            for mode in ("process", "container"):
                if getattr(spec, mode) is None or mode not in spec.knobs[name].modes:
                    continue
                out += [(engine, mode, name, v) for v in values_of(knob)]
    return out


@pytest.mark.parametrize(("engine", "mode", "knob", "value"), cases())
def test_every_rendered_value_reads_back(engine: str, mode: Mode, knob: str, value: Any) -> None:
    spec = load_engine_spec(engine)
    if spec.knobs[knob].style in ("model_file", "option"):
        pytest.skip("chosen by a file, not a flag")
    args, env = knob_args(spec.knobs[knob], value, mode)
    line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), "engine", "serve",
                     "/models/m", *map(shlex.quote, args)])
    back = knobs_from_command(spec, line)
    if not args and not env:  # rendered as nothing: the engine's default
        assert knob not in back
    else:
        assert back[knob] == value


def test_a_users_vllm_command() -> None:
    spec = load_engine_spec("vllm")
    line = """VLLM_CPU_KVCACHE_SPACE=8 vllm serve /models/llama \\
        --served-model-name llama --port 8000 --host 0.0.0.0 \\
        --max-num-seqs=64 --max-num-batched-tokens 4096 --no-enable-prefix-caching \\
        --dtype float32  # bf16 was slower here
    """
    assert knobs_from_command(spec, line) == {
        "kv_cache_space_gib": 8, "max_batch_size": 64, "max_batched_tokens": 4096,
        "prefix_caching": False, "dtype": "float32"}


def test_a_flag_the_tuner_does_not_know_is_named() -> None:
    spec = load_engine_spec("vllm")
    with pytest.raises(ConfigError, match=r"^--max-num-seq: not a knob of vllm the tuner "
                                          r"knows; the knobs and their flags are in "
                                          r"engines/vllm.yaml$"):
        knobs_from_command(spec, "vllm serve m --max-num-seq 64")
    with pytest.raises(ConfigError, match="--max-num-seqs: the command line ends"):
        knobs_from_command(spec, "vllm serve m --max-num-seqs")
    with pytest.raises(ConfigError, match="does not parse as a shell command"):
        knobs_from_command(spec, "vllm serve 'm")
