"""What the engines' own sources say about the specs, as tests: knobs an engine ignores under a
condition are not searched under it, TensorRT-LLM's options file keeps the memory fraction the
command line would lose, TGI never turns load away, and the environment switches exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from annotated_types import Le

from tuner.engines.model_info import ModelInfo
from tuner.engines.render import Rendered, render
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import Mode, load_engine_spec
from tuner.host import Gpu, Hardware
from tuner.loadgen import MAX_POOL
from tuner.workload import ConcurrencyArrivals

from .sampling import sample_configs
from .test_catalogue import HELP

REPO = Path(__file__).resolve().parents[3]
MODEL = ModelInfo(path="/m", architecture="LlamaForCausalLM", attention_heads=32, kv_heads=8,
                  max_model_len=8192, layers=32, hidden_size=4096)
GPU8 = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=1024, numa_nodes=2,
                gpus=[Gpu(index=i, name="H100", memory_mib=81559, uuid=str(i)) for i in range(8)])
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=2, memory_gib=24, numa_nodes=1, gpus=[])
VALUES = {"python": "python3", "served_name": "m", "port": "8000", "host": "0.0.0.0"}

# Knobs an engine ignores while another knob has a value: (engine, condition knob, its value,
# the ignored knobs). TGI's router drops them when the model runs with prefill chunking
# (backends/v3/src/backend.rs, v3.3.5).
IGNORED_WHEN = [
    ("tgi", "chunked_prefill", True,
     ("max_batch_size", "waiting_served_ratio", "max_waiting_tokens")),
]


def model_folder(tmp_path: Path) -> Path:
    for variant in ("bf16", "fp8"):
        (tmp_path / variant).mkdir(exist_ok=True)
    for variant in ("F16", "Q8_0", "Q4_0"):
        (tmp_path / f"tiny-llama-{variant}.gguf").write_bytes(b"")
    return tmp_path


def rendered(engine: str, config: dict[str, Any], hw: Hardware, mode: Mode,
             tmp_path: Path) -> Rendered:
    return render(load_engine_spec(engine), config, device=hw.device, mode=mode,
                  values={**VALUES, "model": "/models"}, model_root=model_folder(tmp_path))


@pytest.mark.parametrize(("engine", "condition", "value", "ignored"), IGNORED_WHEN,
                         ids=[f"{c[0]}-{c[1]}" for c in IGNORED_WHEN])
def test_a_knob_the_engine_ignores_is_not_searched_while_it_is_ignored(
        engine: str, condition: str, value: object, ignored: tuple[str, ...]) -> None:
    configs = sample_configs(engine, GPU8, MODEL, n=60, seed=3)
    assert {c[condition] for c in configs} == {True, False}
    for config in configs:
        if config[condition] == value:
            assert not set(ignored) & set(config), config
        else:
            assert set(ignored) <= set(config), config


def test_tgi_switches_prefill_chunking_with_the_variable_its_server_reads(
        tmp_path: Path) -> None:
    on = rendered("tgi", {"chunked_prefill": True}, GPU8, "container", tmp_path)
    off = rendered("tgi", {"chunked_prefill": False}, GPU8, "container", tmp_path)
    assert on.env["PREFILL_CHUNKING"] == "1"
    assert off.env["PREFILL_CHUNKING"] == "0"
    wiggle = rendered("tgi", {"wiggle_room": 0.85}, GPU8, "container", tmp_path)
    assert wiggle.env["TGI_WIGGLE_ROOM"] == "0.85"


@pytest.mark.parametrize("mode", ["process", "container"])
def test_tgi_admits_every_request_the_load_generator_can_have_in_flight(
        mode: Mode, tmp_path: Path) -> None:
    closed_loop_max = next(m.le for m in ConcurrencyArrivals.model_fields["concurrency"].metadata
                           if isinstance(m, Le))
    for config in [{}, *sample_configs("tgi", GPU8, MODEL, n=20, seed=5)]:
        argv = rendered("tgi", config, GPU8, mode, tmp_path).argv
        assert argv.count("--max-concurrent-requests") == 1
        limit = int(argv[argv.index("--max-concurrent-requests") + 1])
        assert limit >= max(int(closed_loop_max), MAX_POOL)


def test_tgi_batch_size_is_the_routers_batch_cap_not_its_admission_limit(
        tmp_path: Path) -> None:
    argv = rendered("tgi", {"chunked_prefill": False, "max_batch_size": 64}, GPU8, "container",
                    tmp_path).argv
    assert argv[argv.index("--max-batch-size") + 1] == "64"


def options(engine: str, config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    text = rendered(engine, config, GPU8, "container", tmp_path).options
    assert text is not None
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def test_trtllm_options_file_carries_the_memory_fraction(tmp_path: Path) -> None:
    config = {"memory_fraction": 0.8, "kv_cache_dtype": "fp8", "prefix_caching": False}
    out = rendered("trtllm", config, GPU8, "container", tmp_path)
    assert "--kv_cache_free_gpu_memory_fraction" not in out.argv
    assert options("trtllm", config, tmp_path)["kv_cache_config"] == {
        "free_gpu_memory_fraction": 0.8, "dtype": "fp8", "enable_block_reuse": False}
    # Without a searched fraction the file still writes the command line's default, so a
    # kv_cache_config there never replaces the command line's fraction with nothing.
    assert options("trtllm", {}, tmp_path)["kv_cache_config"] == {"free_gpu_memory_fraction": 0.9}
    assert options("trtllm", {"kv_cache_dtype": "fp8"}, tmp_path)["kv_cache_config"] == {
        "free_gpu_memory_fraction": 0.9, "dtype": "fp8"}


def test_every_sampled_trtllm_options_file_keeps_the_memory_fraction(tmp_path: Path) -> None:
    for config in sample_configs("trtllm", GPU8, MODEL, n=30, seed=11):
        kv_cache_config = options("trtllm", config, tmp_path)["kv_cache_config"]
        assert kv_cache_config["free_gpu_memory_fraction"] == pytest.approx(
            config["memory_fraction"])


def test_llamacpp_unified_kv_and_cache_reuse_render_in_both_modes(tmp_path: Path) -> None:
    """Both modes run llama-server: slots, a unified KV cache and cache reuse everywhere."""
    config = {"max_batch_size": 4, "kv_unified": True, "cache_reuse": 256}
    for mode in ("container", "process"):
        argv = rendered("llamacpp", config, CPU, mode, tmp_path).argv
        assert "--kv-unified" in argv
        assert argv[argv.index("--cache-reuse") + 1] == "256"
        assert argv[argv.index("--parallel") + 1] == "4"
    split = rendered("llamacpp", {**config, "kv_unified": False}, CPU, "process", tmp_path)
    assert "--no-kv-unified" in split.argv


def test_a_unified_kv_cache_lets_each_slot_use_the_whole_context() -> None:
    spec = load_engine_spec("llamacpp")
    split = {"max_batch_size": 4, "max_model_len": 2048, "kv_unified": False}
    names = rule_names(spec, split, CPU, MODEL, 1000)
    assert [r.name for r in broken_rules(spec.rules, names)] == ["slots_share_context"]
    names = rule_names(spec, {**split, "kv_unified": True}, CPU, MODEL, 1000)
    assert broken_rules(spec.rules, names) == []
    # n_ctx_seq is padded up to a multiple of 256: 3 slots of 2048 get 768 tokens each.
    names = rule_names(spec, {**split, "max_batch_size": 3}, CPU, MODEL, 768)
    assert broken_rules(spec.rules, names) == []


@pytest.mark.parametrize("engine", ["sglang", "tgi", "trtllm", "llamacpp"])
def test_every_environment_switch_is_one_the_engine_reads(engine: str) -> None:
    text = (REPO / "engines" / "help" / HELP[engine]).read_text()
    for name, knob in load_engine_spec(engine).knobs.items():
        if knob.style == "env":
            assert knob.env is not None
            assert f'"{knob.env}"' in text, f"{engine}: {name} sets {knob.env}, not read there"
