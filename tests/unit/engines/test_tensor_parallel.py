"""Which tensor-parallel sizes the space keeps, for real models' head counts on real hosts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.engines.model_info import load_model_info
from tuner.engines.spec import load_engine_spec
from tuner.host import Gpu, Hardware
from tuner.study import load_search_space

# The attention fields of the models' config.json files (Hugging Face hub).
CONFIGS = {
    "40-heads-10-kv": {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 40,
                       "num_key_value_heads": 10, "num_hidden_layers": 40,
                       "hidden_size": 5120},
    "Qwen2.5-32B": {"architectures": ["Qwen2ForCausalLM"], "num_attention_heads": 40,
                    "num_key_value_heads": 8, "num_hidden_layers": 64, "hidden_size": 5120},
    "Llama-3.1-70B": {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 64,
                      "num_key_value_heads": 8, "num_hidden_layers": 80, "hidden_size": 8192},
    "Llama-3.2-1B": {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 32,
                     "num_key_value_heads": 8, "num_hidden_layers": 16, "hidden_size": 2048},
    "Mistral-7B-MQA-like-2kv": {"architectures": ["MistralForCausalLM"],
                                "num_attention_heads": 32, "num_key_value_heads": 2,
                                "num_hidden_layers": 32, "hidden_size": 4096},
}


def host(n: int) -> Hardware:
    return Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=1024, numa_nodes=2,
                    gpus=[Gpu(index=i, name="NVIDIA H100 80GB HBM3", memory_mib=81559,
                              uuid=f"GPU-{i}") for i in range(n)])


def tp_choices(tmp_path: Path, model: str, gpus: int, parallel: int = 1,
               engine: str = "vllm") -> list[object]:
    folder = tmp_path / model
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIGS[model]))
    space = load_search_space(engine).for_host(host(gpus), load_model_info(str(folder)),
                                                parallel)
    return space.knobs["tensor_parallel"].choices  # type: ignore[union-attr,no-any-return]


@pytest.mark.parametrize(("model", "gpus", "parallel", "choices"), [
    # 10 KV heads split over 2 ranks, not over 4 or 8 (neither divides nor is divided by 10)
    ("40-heads-10-kv", 8, 1, [1, 2]),
    ("Qwen2.5-32B", 8, 1, [1, 2, 4, 8]),
    ("Llama-3.1-70B", 6, 1, [1, 2, 4]),        # TP 4 on a 6-GPU host: 4 need not divide 6
    ("Llama-3.1-70B", 8, 2, [1, 2, 4]),        # two trials at once: each has 4 GPUs
    ("Llama-3.1-70B", 8, 8, [1]),
    ("Mistral-7B-MQA-like-2kv", 8, 1, [1, 2, 4, 8]),  # 2 KV heads replicated over 4 or 8 ranks
])
def test_tensor_parallel_sizes_fit_heads_gpus_and_parallel_trials(
        tmp_path: Path, model: str, gpus: int, parallel: int, choices: list[int]) -> None:
    assert tp_choices(tmp_path, model, gpus, parallel) == choices


@pytest.mark.parametrize("engine", ["sglang", "tgi", "trtllm"])
def test_every_engine_filters_tensor_parallel_the_same_way(tmp_path: Path, engine: str) -> None:
    assert tp_choices(tmp_path, "40-heads-10-kv", 8, engine=engine) == [1, 2]


def test_data_parallel_fits_a_trials_share_of_the_gpus(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIGS["Llama-3.2-1B"]))
    space = load_search_space("vllm").for_host(host(6), load_model_info(str(folder)), 2)
    assert space.knobs["data_parallel"].choices == [1, 2]  # type: ignore[union-attr]


def test_a_cpu_host_rents_one_host_whatever_its_tensor_parallel_size() -> None:
    spec = load_engine_spec("vllm")
    assert spec.accelerators_used({"tensor_parallel": 2}, "cpu") == 1
    assert spec.accelerators_used({"tensor_parallel": 2, "data_parallel": 2}, "gpu") == 4
