import optuna
import pytest

from tuner.engines.model_info import ModelInfo
from tuner.engines.rules import broken_rules, rule_names
from tuner.engines.spec import load_engine_spec
from tuner.hardware import Gpu, Hardware, parse_nvidia_smi
from tuner.launch.classify import classify_log
from tuner.search.space import load_search_space

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
    assert set(clamped) == set(space.knobs)


def test_nvidia_smi_output_parses() -> None:
    text = ("0, NVIDIA H100 80GB HBM3, 81559, GPU-1f7c\n"
            "1, NVIDIA H100 80GB HBM3, 81559, GPU-22aa\n")
    parsed = parse_nvidia_smi(text)
    assert [g.index for g in parsed] == [0, 1]
    assert parsed[0].memory_mib == 81559


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
