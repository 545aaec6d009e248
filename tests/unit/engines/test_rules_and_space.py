import optuna
import pytest

from tuner.engines.model_info import ModelInfo
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import load_engine_spec
from tuner.host import Gpu, Hardware
from tuner.launch import classify_log
from tuner.loadgen import ServerCaps, request_body
from tuner.study import CategoricalKnob, SearchSpace, load_search_space
from tuner.workload import PlannedRequest

SPEC = load_engine_spec("vllm")
MODEL = ModelInfo(path="/m", architecture=None, attention_heads=12, kv_heads=4,
                  max_model_len=8192, layers=2, hidden_size=768)
CPU = Hardware(device="cpu", cpu_model="x", cpu_cores=2, memory_gib=24, numa_nodes=1, gpus=[])


def gpus(n: int) -> Hardware:
    return Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=512, numa_nodes=2,
                    gpus=[Gpu(index=i, name="L4", memory_mib=23034, uuid=str(i))
                          for i in range(n)])


def broken(config: dict[str, object], hw: Hardware = CPU) -> list[str]:
    return [r.name for r in broken_rules(SPEC.rules, rule_names(SPEC, config, hw, MODEL))]


@pytest.mark.parametrize(("config", "hw", "rule"), [
    ({"max_batch_size": 64, "max_batched_tokens": 32}, CPU, "batched_tokens_below_batch_size"),
    ({"chunked_prefill": False, "max_batched_tokens": 4096}, CPU,
     "unchunked_prefill_below_context"),
    ({"tensor_parallel": 8}, gpus(8), "tp_divides_heads"),
    ({"tensor_parallel": 4, "pipeline_parallel": 2}, gpus(4), "parallel_fits_devices"),
    ({"block_size": 16}, CPU, "cpu_block_size"),
    ({"tensor_parallel": 2}, CPU, "cpu_single_node_parallel"),
    ({"kv_cache_dtype": "fp8"}, CPU, "cpu_fp8_kv_needs_avx512"),  # an AVX2-only host
    ({"async_scheduling": True, "speculative_decoding": "ngram-k4"}, gpus(1),
     "async_scheduling_with_cpu_ngram"),
    ({"long_prefill_token_threshold": 2048, "max_model_len": 1024}, gpus(1),
     "long_prefill_threshold_above_context"),
])
def test_each_rule_catches_its_case(config: dict[str, object], hw: Hardware, rule: str) -> None:
    assert rule in broken(config, hw)


def test_fp8_kv_cache_on_cpu_follows_the_instruction_sets() -> None:
    avx512 = CPU.model_copy(update={"cpu_flags": ["avx2", "avx512f"]})
    assert broken({"kv_cache_dtype": "fp8"}, avx512) == []  # head size 64
    odd = ModelInfo(path="/m", architecture=None, attention_heads=16, kv_heads=4,
                    max_model_len=8192, layers=2, hidden_size=16 * 48)
    names = rule_names(SPEC, {"kv_cache_dtype": "fp8"}, avx512, odd)
    assert [r.name for r in broken_rules(SPEC.rules, names)] == ["cpu_fp8_kv_head_size"]


def test_defaults_break_no_rule() -> None:
    assert broken({}) == []
    assert broken({}, gpus(8)) == []


def test_max_model_len_knob_relaxes_the_prefill_rule() -> None:
    assert broken({"chunked_prefill": False, "max_batched_tokens": 4096,
                   "max_model_len": 4096}) == []


def test_space_adapts_to_the_host() -> None:
    space = load_search_space("vllm")
    cpu = space.for_host(CPU, MODEL)
    assert "memory_fraction" not in cpu.knobs
    assert "kv_cache_space_gib" in cpu.knobs
    assert cpu.knobs["block_size"].choices == [32, 64, 128]  # type: ignore[union-attr]
    assert cpu.knobs["tensor_parallel"].choices == [1]  # type: ignore[union-attr]
    gpu = space.for_host(gpus(8), MODEL)  # 12 heads: 8 does not divide them
    assert gpu.knobs["tensor_parallel"].choices == [1, 2, 4]  # type: ignore[union-attr]
    assert "quantization" in gpu.knobs
    assert "kv_cache_space_gib" not in gpu.knobs


def test_token_budgets_and_prompt_caps_reach_small_chunks_on_cpu_only() -> None:
    space = load_search_space("vllm")
    cpu, gpu = space.for_host(CPU, MODEL), space.for_host(gpus(1), MODEL)
    assert (cpu.knobs["max_batched_tokens"].low, gpu.knobs["max_batched_tokens"].low) == (
        32, 256)  # type: ignore[union-attr]
    cap = "long_prefill_token_threshold"
    assert cpu.knobs[cap].choices == [0, 16, 32, 64, 128]  # type: ignore[union-attr]
    assert gpu.knobs[cap].choices == [0, 256, 512, 1024, 2048]  # type: ignore[union-attr]


@pytest.mark.parametrize(("low_on", "message"), [
    ({"cpu": 9000}, "low_on.cpu <= high` must hold"),
    ({"cpu": 0}, "a log-scale knob needs low_on.cpu >= 1"),
])
def test_a_device_low_end_outside_the_range_is_refused(low_on: dict[str, int],
                                                       message: str) -> None:
    knob = {"type": "int", "low": 256, "high": 8192, "log": True, "low_on": low_on}
    with pytest.raises(ValueError, match=message):
        SearchSpace.model_validate({"engine": "vllm", "knobs": {"max_batched_tokens": knob}})


def test_conditional_knob_is_sampled_only_when_its_condition_holds() -> None:
    space = load_search_space("vllm").for_host(CPU, MODEL)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = []
    for _ in range(30):
        t = study.ask()
        config = space.sample(t)
        study.tell(t, 0.0)
        seen.append(config)
        assert ("optimization_level" in config) is (not config["eager"])
    assert {c["eager"] for c in seen} == {True, False}


def test_engine_defaults_are_inside_the_space() -> None:
    space = load_search_space("vllm").for_host(CPU, MODEL)
    defaults = SPEC.defaults("cpu")
    clamped = space.legal_defaults(defaults)
    # compute_cores' default, every core of the engine's share, is the host's, not a number
    assert set(clamped) == set(space.knobs) - {"compute_cores"}


@pytest.mark.parametrize(("log", "code", "outcome"), [
    ("ValueError: No available memory for the cache blocks. Try increasing", 1, "oom"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB", 1, "oom"),
    ("ValueError: No common block size for 8 (CPU_ATTN: [MultipleOf(32)]).", 1,
     "invalid_config"),
    ("api_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp9'", 2,
     "invalid_config"),
    ("Segmentation fault", 139, "crashed"),
    ("", 137, "oom"),
])
def test_failures_are_classified_from_the_log(log: str, code: int, outcome: str) -> None:
    assert classify_log(f"INFO starting\n{log}\nINFO bye", SPEC.failures, code)[0] == outcome


CPU_NGRAM = ["ngram-k2", "ngram-k4"]  # the n-gram proposer that runs on the CPU
GPU_ONLY = ["memory_fraction", "data_parallel", "stream_interval",
            "max_cudagraph_capture_size", "performance_mode", "speculative_decoding",
            "async_scheduling"]


def test_the_cpu_space_has_the_cpu_knobs_and_none_of_the_gpu_ones() -> None:
    cpu = load_search_space("vllm").for_host(CPU, MODEL)
    assert list(cpu.knobs) == ["max_batch_size", "max_batched_tokens", "chunked_prefill",
                               "long_prefill_token_threshold", "prefix_caching", "kv_cache_dtype",
                               "dtype", "kv_cache_space_gib", "compute_cores", "block_size",
                               "tensor_parallel", "quantization",
                               "eager", "optimization_level", "scheduling_policy"]
    assert cpu.knobs["quantization"].choices == ["none"]  # type: ignore[union-attr]
    gpu = load_search_space("vllm").for_host(gpus(8), MODEL)
    assert set(GPU_ONLY) <= set(gpu.knobs)
    assert not set(GPU_ONLY) & set(cpu.knobs)


def test_data_parallel_sizes_fit_the_gpus() -> None:
    space = load_search_space("vllm")
    for n, sizes in [(1, [1]), (4, [1, 2, 4])]:
        knob = space.for_host(gpus(n), MODEL).knobs["data_parallel"]
        assert isinstance(knob, CategoricalKnob)
        assert knob.choices == sizes
    assert "parallel_fits_devices" in broken({"tensor_parallel": 2, "data_parallel": 4}, gpus(4))


def test_async_scheduling_is_refused_only_with_the_cpu_ngram_proposer() -> None:
    for method in CPU_NGRAM:
        assert broken({"async_scheduling": True, "speculative_decoding": method}, gpus(1)) == [
            "async_scheduling_with_cpu_ngram"]
        # Unset, vLLM turns async scheduling off for it (a warning, no error).
        assert broken({"speculative_decoding": method}, gpus(1)) == []
        assert broken({"async_scheduling": False, "speculative_decoding": method}, gpus(1)) == []
    for method in ["none", "ngram_gpu-k2", "ngram_gpu-k4"]:
        assert broken({"async_scheduling": True, "speculative_decoding": method}, gpus(1)) == []


def test_sampled_gpu_configs_break_no_speculative_or_prefill_rule() -> None:
    space = load_search_space("vllm").for_host(gpus(8), MODEL)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=4))
    seen_ngram = seen_async = False
    for _ in range(80):
        t = study.ask()
        config = space.sample(t)
        study.tell(t, 0.0)
        if config["speculative_decoding"] in CPU_NGRAM:
            seen_ngram = True
            assert "async_scheduling" not in config
        else:
            seen_async = seen_async or "async_scheduling" in config
        assert ("long_prefill_token_threshold" in config) is config["chunked_prefill"]
        graphs = not config["eager"] and config.get("optimization_level", 0) >= 1
        assert ("max_cudagraph_capture_size" in config) is graphs
        assert ("performance_mode" in config) is graphs
        names = {r.name for r in broken_rules(SPEC.rules, rule_names(SPEC, config, gpus(8),
                                                                     MODEL))}
        assert not names & {"async_scheduling_with_cpu_ngram",
                            "long_prefill_threshold_above_context"}, config
    assert seen_ngram
    assert seen_async


def test_the_gpu_defaults_are_points_of_the_gpu_space() -> None:
    space = load_search_space("vllm").for_host(gpus(8), MODEL)
    told = space.legal_defaults(SPEC.defaults("gpu"))
    assert told["speculative_decoding"] == "none"
    assert told["stream_interval"] == 1
    assert told["long_prefill_token_threshold"] == 0
    assert told["performance_mode"] == "balanced"
    assert told["data_parallel"] == 1
    # vLLM decides these when unset, so the defaults trial tells Optuna nothing about them.
    assert "async_scheduling" not in told
    assert "max_cudagraph_capture_size" not in told


def test_speculative_decoding_keeps_the_forced_output_lengths() -> None:
    """vLLM 0.32 refuses only min_p and logit_bias with a speculative config
    (SamplingParams._validate_spec_decode); the tuner forces lengths with max_tokens,
    min_tokens and ignore_eos, which it honours, and --generation-config vllm keeps a model's
    generation_config.json from adding min_p."""
    req = PlannedRequest(index=0, class_name="c", prefix_group=None, input_tokens=8,
                         output_tokens=16, prompt="x")
    for api in ("completions", "chat"):
        body = request_body(req, model="m", api=api, caps=ServerCaps(), temperature=0.0)
        assert body["max_tokens"] == body["min_tokens"] == 16
        assert body["ignore_eos"] is True
        assert not {"min_p", "logit_bias"} & set(body)
    assert SPEC.process is not None
    assert SPEC.container is not None
    for argv in (SPEC.process.argv, SPEC.container.argv):
        assert argv[argv.index("--generation-config") + 1] == "vllm"
