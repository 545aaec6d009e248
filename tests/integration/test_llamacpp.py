"""llama.cpp for real on CPU: llama-cpp-python's server on GGUF variants of the tiny model. (A
whole llama.cpp study, its quantization variants run and its best re-measured, is
test_distributed.py::test_two_llamacpp_workers_run_one_study; tune compare runs another.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.engines import load_engine_spec, render
from tuner.models import make_gguf_variants

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_gguf_variants_are_made_beside_the_model(gguf_model: Path) -> None:
    variants = make_gguf_variants(gguf_model)  # the session's fixture made them: kept as is
    assert set(variants) == {"F16", "Q8_0", "Q4_0"}
    assert all(path.parent == gguf_model for path in variants.values())
    sizes = {name: path.stat().st_size for name, path in variants.items()}
    assert sizes["Q4_0"] < sizes["Q8_0"] < sizes["F16"]


def test_gguf_tokenizer_counts_prompts_exactly_like_the_harness(gguf_model: Path) -> None:
    import llama_cpp
    import numpy as np

    from tuner.workload import PromptSynth, load_tokenizer

    synth = PromptSynth(load_tokenizer(str(gguf_model)))
    llm = llama_cpp.Llama(str(gguf_model / "tiny-llama-Q8_0.gguf"), vocab_only=True,
                          verbose=False)
    rng = np.random.default_rng(0)
    for n in (12, 80, 700):
        prompt = synth.prompt(rng, n)
        assert len(llm.tokenize(prompt.encode(), add_bos=True)) == n


def test_rendered_process_commands_parse_with_llama_cpp_pythons_parser(gguf_model: Path
                                                                      ) -> None:
    import argparse

    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ConfigFileSettings, ModelSettings, ServerSettings

    del ConfigFileSettings
    spec = load_engine_spec("llamacpp")
    parser = argparse.ArgumentParser()
    add_args_from_model(parser, ModelSettings)
    add_args_from_model(parser, ServerSettings)
    config = {"quantization": "Q4_0", "max_batched_tokens": 256, "micro_batch_size": 128,
              "threads": 2, "threads_batch": 2, "max_model_len": 4096, "flash_attn": True,
              "kv_cache_dtype": "q8_0", "kv_cache_dtype_v": "q8_0", "prefix_caching": True}
    rendered = render(spec, config, device="cpu", mode="process",
                      values={"python": "python", "model": str(gguf_model),
                              "served_name": "tiny-llama", "port": "8000", "host": "127.0.0.1"})
    args = parser.parse_args(rendered.argv[3:])
    model = parse_model_from_args(ModelSettings, args)
    server = parse_model_from_args(ServerSettings, args)
    assert model.model.endswith("tiny-llama-Q4_0.gguf")
    assert (model.n_batch, model.n_ubatch, model.n_threads, model.n_ctx) == (256, 128, 2, 4096)
    assert model.flash_attn is True
    assert (model.type_k, model.type_v) == (8, 8)
    assert model.cache is True
    assert server.interrupt_requests is False
