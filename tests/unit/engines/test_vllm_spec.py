"""vLLM's spec against vLLM itself: every knob value the search space can produce renders into
a command line that vLLM's own argument parser accepts, and means what we think it means.

The tests that load vLLM's parser are slow (importing vLLM takes 10-20 s on 2 cores): vLLM is
imported in their fixture, not at collection, so the fast unit tests do not pay for it."""

from pathlib import Path
from typing import Any

import pytest

from tuner.engines.model_info import ModelInfo
from tuner.engines.render import render
from tuner.engines.spec import Mode, load_engine_spec
from tuner.host import Gpu, Hardware
from tuner.study import CategoricalKnob, load_search_space

from .sampling import sample_configs

SPEC = load_engine_spec("vllm")
MODEL = ModelInfo(path="/m", architecture="LlamaForCausalLM", attention_heads=32, kv_heads=8,
                  max_model_len=8192, layers=2, hidden_size=256)
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=2, memory_gib=24, numa_nodes=1, gpus=[])
GPU = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=512, numa_nodes=2,
               gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=f"GPU-{i}")
                     for i in range(8)])


@pytest.fixture(scope="module")
def parser():  # type: ignore[no-untyped-def]
    from vllm.entrypoints.launchers import cli_args  # the real parser of the pinned vLLM
    from vllm.utils import argparse_utils

    return cli_args.make_arg_parser(argparse_utils.FlexibleArgumentParser())


def configs(hw: Hardware) -> list[dict[str, object]]:
    return sample_configs("vllm", hw, MODEL, n=40, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("hw", [CPU, GPU], ids=["cpu", "gpu"])
def test_rendered_commands_parse_with_vllms_own_parser(parser, hw: Hardware) -> None:  # type: ignore[no-untyped-def]
    for config in configs(hw):
        rendered = render(SPEC, config, device=hw.device, mode="process",
                          values={"python": "python", "model": "/m", "served_name": "m",
                                  "port": "8000", "host": "127.0.0.1"})
        args = parser.parse_args(rendered.argv[3:])  # after python -m module
        assert args.max_num_seqs == config["max_batch_size"]
        assert args.max_num_batched_tokens == config["max_batched_tokens"]
        assert args.enable_chunked_prefill is config["chunked_prefill"]
        assert args.enable_prefix_caching is config["prefix_caching"]
        assert args.block_size == config["block_size"]
        assert args.enforce_eager is config["eager"]
        assert args.tensor_parallel_size == config["tensor_parallel"]
        assert args.kv_cache_dtype == config["kv_cache_dtype"]
        if hw.device == "cpu":
            assert rendered.env["VLLM_CPU_KVCACHE_SPACE"] == str(config["kv_cache_space_gib"])
        else:
            assert args.gpu_memory_utilization == pytest.approx(config["memory_fraction"])
            assert args.quantization == (None if config["quantization"] == "none"
                                         else config["quantization"])
            assert_gpu_knobs(args, config)


def assert_gpu_knobs(args: Any, config: dict[str, Any]) -> None:
    """The GPU-only knobs reach vLLM's arguments as meant (absent: vLLM's own default)."""
    assert args.data_parallel_size == config.get("data_parallel", 1)
    assert args.stream_interval == config.get("stream_interval", 1)
    assert args.long_prefill_token_threshold == config.get("long_prefill_token_threshold", 0)
    assert args.max_cudagraph_capture_size == config.get("max_cudagraph_capture_size")
    assert args.performance_mode == config.get("performance_mode", "balanced")
    assert args.async_scheduling is config.get("async_scheduling")  # None: vLLM decides
    choice = config.get("speculative_decoding", "none")
    if choice == "none":
        assert args.speculative_config is None
    else:
        method, tokens = choice.split("-k")
        from vllm.config import SpeculativeConfig

        spec = SpeculativeConfig(**args.speculative_config)  # vLLM's own validation
        assert spec.method == method
        assert spec.num_speculative_tokens == int(tokens)
        assert spec.use_ngram()
        assert spec.prompt_lookup_min == spec.prompt_lookup_max == 4


GPU_KNOBS = ["data_parallel", "stream_interval", "long_prefill_token_threshold",
             "max_cudagraph_capture_size", "performance_mode", "speculative_decoding",
             "async_scheduling"]


def test_sampled_gpu_configs_exercise_every_gpu_only_knob() -> None:
    seen: dict[str, set[object]] = {k: set() for k in GPU_KNOBS}
    for config in configs(GPU):
        for knob in GPU_KNOBS:
            if knob in config:
                seen[knob].add(config[knob])
    assert all(len(values) >= 2 for values in seen.values()), seen


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["process", "container"])
def test_every_choice_of_the_gpu_only_knobs_parses(parser, mode: Mode) -> None:  # type: ignore[no-untyped-def]
    space = load_search_space("vllm").for_host(GPU, MODEL)
    for knob in GPU_KNOBS:
        choices = space.knobs[knob]
        values = choices.choices if isinstance(choices, CategoricalKnob) else [False, True]
        for value in values:
            config = {knob: value}
            rendered = render(SPEC, config, device="gpu", mode=mode,
                              values={"python": "python", "model": "/m", "served_name": "m",
                                      "port": "8000", "host": "127.0.0.1"})
            argv = rendered.argv[3:] if mode == "process" else ["--model", *rendered.argv]
            assert_gpu_knobs(parser.parse_args(argv), config)


@pytest.mark.slow
def test_the_gpu_only_knobs_default_to_what_vllms_parser_defaults_to(parser) -> None:  # type: ignore[no-untyped-def]
    """The defaults trial sets no flag; each knob's `default` says what vLLM then runs with."""
    defaults = SPEC.defaults("gpu")
    assert_gpu_knobs(parser.parse_args(["--model", "/m"]),
                     {k: defaults[k] for k in GPU_KNOBS if defaults[k] is not None})
    assert render(SPEC, {}, device="gpu", mode="process",
                  values={"python": "py", "model": "/m", "served_name": "m", "port": "1",
                          "host": "h"}).argv[-2:] == ["--generation-config", "vllm"]


@pytest.mark.slow
def test_a_flag_vllm_does_not_have_fails_the_parser(parser) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "/m", "--max-num-seqz", "4"])


def test_defaults_render_nothing_but_the_always_knobs() -> None:
    rendered = render(SPEC, {}, device="cpu", mode="process",
                      values={"python": "py", "model": "/m", "served_name": "m", "port": "1",
                              "host": "h"})
    assert rendered.env == {"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_USE_AOT_COMPILE": "0"}
    assert "--max-num-seqs" not in rendered.argv


def test_help_text_is_saved_with_its_version() -> None:
    help_file = Path(__file__).resolve().parents[3] / "engines" / "help" / "vllm-0.32.0.txt"
    text = help_file.read_text()
    assert text.startswith("# vllm 0.32.0")
    for knob in SPEC.knobs.values():
        if knob.flag:
            assert knob.flag in text, knob.flag
