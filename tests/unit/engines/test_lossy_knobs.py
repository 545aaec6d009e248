"""Which knobs can change a model's answers, per engine, and which of a configuration's
values are lossy changes (not the engine's default)."""

from __future__ import annotations

import pytest

from tuner.engines.spec import engine_names, load_engine_spec

LOSSY = {
    "vllm": {"kv_cache_dtype", "quantization", "speculative_decoding", "dtype"},
    "llamacpp": {"quantization", "kv_cache_dtype", "kv_cache_dtype_v"},
    "sglang": {"kv_cache_dtype", "quantization"},
    "tgi": {"kv_cache_dtype", "quantization", "dtype"},
    "trtllm": {"quantization", "kv_cache_dtype"},
    "transformers": {"dtype", "quantization"},
}


@pytest.mark.parametrize("engine", engine_names())
def test_every_engines_quantisation_and_kv_cache_type_are_marked_lossy(engine: str) -> None:
    spec = load_engine_spec(engine)
    assert {k for k, v in spec.knobs.items() if v.lossy} == LOSSY[engine]


def test_only_lossy_knobs_set_away_from_their_default_are_lossy_changes() -> None:
    spec = load_engine_spec("llamacpp")
    config = {"quantization": "Q4_0", "kv_cache_dtype": "f16", "kv_cache_dtype_v": None,
              "max_batched_tokens": 256}
    assert spec.lossy_changes(config, "cpu") == {"quantization": "Q4_0"}
    assert spec.lossy_changes(spec.defaults("cpu"), "cpu") == {}
    vllm = load_engine_spec("vllm")
    assert vllm.lossy_changes({"kv_cache_dtype": "fp8", "quantization": "none"}, "gpu") == {
        "kv_cache_dtype": "fp8"}
