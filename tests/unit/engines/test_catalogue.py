"""Every engine's rendered command against that engine's real command line: each flag a
configuration can produce must appear in the engine's saved --help text (engines/help/), so a
flag that does not exist fails here. Each validity rule of engines.md section 6 has a case."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tuner.engines.model_info import ModelInfo
from tuner.engines.render import render
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import Mode, engine_names, load_engine_spec
from tuner.host import Gpu, Hardware
from tuner.study import load_search_space

from .sampling import sample_configs

REPO = Path(__file__).resolve().parents[3]
HELP = {"sglang": "sglang-0.5.6.txt", "tgi": "tgi-3.3.5.txt",
        "trtllm": "trtllm-serve-4c05a748.txt", "llamacpp": "llama-server-b11312.txt",
        "vllm": "vllm-0.32.0.txt", "transformers": "transformers-5.19.0.txt"}
MODEL = ModelInfo(path="/m", architecture="LlamaForCausalLM", attention_heads=32, kv_heads=8,
                  max_model_len=8192, layers=32, hidden_size=4096)
GPU8 = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=1024, numa_nodes=2,
                gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=str(i)) for i in range(8)])
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=2, memory_gib=24, numa_nodes=1, gpus=[])


def model_folder(tmp_path: Path) -> Path:
    """A model folder with every variant the search spaces name (GGUF files, checkpoint dirs)."""
    for variant in ("F16", "Q8_0", "Q4_0"):
        (tmp_path / f"tiny-llama-{variant}.gguf").write_bytes(b"")
    for variant in ("bf16", "fp8"):
        (tmp_path / variant).mkdir(exist_ok=True)
    return tmp_path


def sampled(engine: str, hw: Hardware) -> list[dict[str, Any]]:
    return sample_configs(engine, hw, MODEL, n=30, seed=7)


def flags_in(argv: list[str]) -> set[str]:
    return {a.split("=")[0] for a in argv if re.match(r"^--?[A-Za-z]", a)}


@pytest.mark.parametrize(("engine", "mode", "device"), [
    ("sglang", "container", "gpu"), ("tgi", "container", "gpu"), ("trtllm", "container", "gpu"),
    ("llamacpp", "container", "cpu"), ("llamacpp", "process", "cpu"),
    ("transformers", "process", "cpu"), ("transformers", "process", "gpu")])
def test_every_rendered_flag_exists_in_the_engines_help(engine: str, mode: Mode, device: str,
                                                        tmp_path: Path) -> None:
    spec = load_engine_spec(engine)
    text = (REPO / "engines" / "help" / HELP[engine]).read_text()
    model = model_folder(tmp_path)
    hw = CPU if device == "cpu" else GPU8
    seen: set[str] = set()
    for config in [{}, *sampled(engine, hw)]:
        rendered = render(spec, config, device=hw.device, mode=mode, cpus="1",
                          values={"python": "python3", "model": "/models", "served_name": "m",
                                  "port": "8000", "host": "0.0.0.0"}, model_root=model)
        argv = rendered.argv[3:] if rendered.argv[1:2] == ["-m"] else rendered.argv  # python -m
        for flag in flags_in(argv):
            assert re.search(rf"(^|[\s,`]){re.escape(flag)}([\s,`=<]|$)", text, re.M), \
                f"{engine}: {flag} is not in {HELP[engine]}"
            seen.add(flag)
        for line in (rendered.options or "").splitlines():
            key = line.strip().split(":")[0]
            if key:
                assert key in text, f"{engine}: option {key} is not in {HELP[engine]}"
    assert len(seen) >= 4


def test_every_engine_and_space_file_loads_and_matches() -> None:
    assert set(engine_names()) == {"llamacpp", "sglang", "tgi", "trtllm", "transformers",
                                   "vllm"}
    for engine in engine_names():
        load_search_space(engine).check_against(load_engine_spec(engine))
        assert (REPO / "engines" / "help" / HELP[engine]).is_file()


def test_common_vocabulary_maps_onto_every_engine() -> None:
    common = {"max_batch_size", "max_batched_tokens", "kv_cache_dtype", "quantization",
              "prefix_caching", "max_model_len"}
    for engine in set(engine_names()) - {"transformers"}:
        assert common <= set(load_engine_spec(engine).knobs), engine
    for engine in ("vllm", "sglang", "tgi", "trtllm"):
        assert {"tensor_parallel", "memory_fraction", "chunked_prefill"} <= set(
            load_engine_spec(engine).knobs), engine


def test_transformers_serve_names_its_knobs_in_the_common_vocabulary_where_one_exists() -> None:
    """It has no slot limit, KV-cache dtype, prefix-cache switch or context length on its
    command line; what it has is named as the other engines name it."""
    others = set().union(*(load_engine_spec(e).knobs for e in engine_names()
                           if e != "transformers"))
    own = set(load_engine_spec("transformers").knobs)
    assert own - others == {"compile", "kv_cache_blocks"}
    assert {"max_batched_tokens", "block_size", "dtype", "quantization", "memory_fraction",
            "continuous_batching", "attention"} <= own & others


def test_tgi_cannot_force_output_lengths_and_says_so() -> None:
    assert load_engine_spec("tgi").forces_output_length is False
    assert all(load_engine_spec(e).forces_output_length for e in engine_names() if e != "tgi")


def test_trtllm_renders_its_options_file(tmp_path: Path) -> None:
    spec = load_engine_spec("trtllm")
    rendered = render(spec, {"kv_cache_dtype": "fp8", "prefix_caching": False,
                             "capacity_scheduler_policy": "MAX_UTILIZATION",
                             "quantization": "fp8", "max_batch_size": 64},
                      device="gpu", mode="container",
                      values={"python": "p", "model": "/models/model", "served_name": "m",
                              "port": "8000", "host": "0.0.0.0"}, model_root=model_folder(tmp_path))
    assert rendered.argv[0] == "/models/model/fp8"
    assert "--extra_llm_api_options" in rendered.argv
    assert rendered.options is not None
    assert "dtype: fp8" in rendered.options
    assert "enable_block_reuse: false" in rendered.options
    assert "capacity_scheduler_policy: MAX_UTILIZATION" in rendered.options


def test_llamacpp_runs_llama_server_with_the_same_flags_in_both_modes(tmp_path: Path) -> None:
    spec = load_engine_spec("llamacpp")
    config = {"quantization": "Q8_0", "max_batched_tokens": 256, "flash_attn": True,
              "kv_cache_dtype": "q8_0", "threads": 2, "max_batch_size": 4, "kv_unified": False,
              "continuous_batching": False, "poll": 0, "load_mode": "mlock"}
    values = {"python": "py", "served_name": "m", "port": "1", "host": "h"}
    model = model_folder(tmp_path)
    process = render(spec, config, device="cpu", mode="process",
                     values={**values, "model": str(model)})
    container = render(spec, config, device="cpu", mode="container",
                       values={**values, "model": "/models"}, model_root=model)
    assert process.argv[0] == "llama-server"
    assert process.argv[process.argv.index("--model") + 1] == str(model / "tiny-llama-Q8_0.gguf")
    assert container.argv[container.argv.index("-m") + 1] == "/models/tiny-llama-Q8_0.gguf"
    knobs = ["--batch-size", "256", "--flash-attn", "on", "--cache-type-k", "q8_0", "--threads",
             "2", "--parallel", "4", "--no-kv-unified", "--no-cont-batching", "--poll", "0",
             "--load-mode", "mlock"]
    for argv in (process.argv, container.argv):
        flags = argv[argv.index("--metrics") + 1:]
        assert sorted(flags) == sorted(knobs)


def test_llamacpp_on_its_cores_gets_one_thread_per_core_unless_the_config_says(
        tmp_path: Path) -> None:
    """llama-server's own default counts the host's physical cores, wherever it is confined."""
    spec = load_engine_spec("llamacpp")
    values = {"python": "py", "served_name": "m", "port": "1", "host": "h",
              "model": str(model_folder(tmp_path))}
    pinned = render(spec, {}, device="cpu", mode="process", values=values, cpus="1-3")
    assert pinned.argv[pinned.argv.index("--threads") + 1] == "3"
    assert pinned.cpus == "1-3"
    chosen = render(spec, {"threads": 1}, device="cpu", mode="process", values=values,
                    cpus="1-3")
    assert chosen.argv.count("--threads") == 1
    assert chosen.argv[chosen.argv.index("--threads") + 1] == "1"
    assert "--threads" not in render(spec, {}, device="cpu", mode="process",
                                     values=values).argv


CASES: list[tuple[str, dict[str, Any], Hardware, int, str]] = [
    ("vllm", {"max_batch_size": 64, "max_batched_tokens": 32}, CPU, 100,
     "batched_tokens_below_batch_size"),
    ("vllm", {"max_model_len": 1024}, CPU, 2000, "context_fits_requests"),
    ("sglang", {"scheduling_policy": "lpm", "prefix_caching": False}, GPU8, 100,
     "cache_aware_policy_needs_radix_cache"),
    ("sglang", {"scheduling_policy": "dfs-weight", "prefix_caching": False}, GPU8, 100,
     "cache_aware_policy_needs_radix_cache"),
    ("sglang", {"chunked_prefill": False, "chunked_prefill_size": 4096}, GPU8, 100,
     "chunk_size_without_chunking"),
    ("sglang", {"tensor_parallel": 16}, GPU8, 100, "parallel_fits_devices"),
    ("sglang", {}, CPU, 100, "gpu_only"),
    ("tgi", {"max_input_tokens": 4096, "max_model_len": 4096}, GPU8, 100, "input_below_total"),
    ("tgi", {"max_model_len": 9000, "max_batch_total_tokens": 8000}, GPU8, 100,
     "total_within_batch_budget"),
    ("tgi", {"max_batched_tokens": 9000, "max_batch_total_tokens": 8000}, GPU8, 100,
     "prefill_within_batch_budget"),
    ("tgi", {"chunked_prefill": False, "max_batched_tokens": 1000, "max_input_tokens": 2000},
     GPU8, 100, "prefill_fits_input_without_chunking"),
    ("tgi", {"dtype": "bfloat16", "quantization": "fp8"}, GPU8, 100, "dtype_with_quantize"),
    ("tgi", {"quantization": "exl2", "tensor_parallel": 2}, GPU8, 100, "exl2_not_sharded"),
    ("tgi", {"attention": "paged", "prefix_caching": True}, GPU8, 100,
     "prefix_caching_needs_flash_attention"),
    ("trtllm", {"chunked_prefill": False, "max_batched_tokens": 1024}, GPU8, 3000,
     "prompt_fits_without_chunking"),
    ("trtllm", {"tensor_parallel": 3}, GPU8, 100, "tp_divides_heads"),
    ("llamacpp", {"kv_cache_dtype_v": "q8_0", "flash_attn": False}, CPU, 100,
     "quantized_v_cache_needs_flash_attn"),
    ("llamacpp", {"micro_batch_size": 1024, "max_batched_tokens": 512}, CPU, 100,
     "micro_batch_above_batch"),
    ("llamacpp", {"max_batch_size": 4, "max_model_len": 2048}, CPU, 1000,
     "slots_share_context"),
    ("llamacpp", {"max_model_len": 2048}, CPU, 3000, "context_fits_requests"),
]


@pytest.mark.parametrize(("engine", "config", "hw", "longest", "rule"), CASES,
                         ids=[f"{c[0]}-{c[4]}" for c in CASES])
def test_each_validity_rule_rejects_its_case(engine: str, config: dict[str, Any],
                                             hw: Hardware, longest: int, rule: str) -> None:
    spec = load_engine_spec(engine)
    names = rule_names(spec, config, hw, MODEL, longest)
    assert rule in [r.name for r in broken_rules(spec.rules, names)]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi", "trtllm", "llamacpp"])
def test_engine_defaults_break_no_rule_on_their_hardware(engine: str) -> None:
    spec = load_engine_spec(engine)
    hw = CPU if engine in ("vllm", "llamacpp") else GPU8
    names = rule_names(spec, {}, hw, MODEL, 600)
    assert broken_rules(spec.rules, names) == []
