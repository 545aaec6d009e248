"""llama.cpp for real on CPU: the llama-server that set-up builds, on GGUF variants of the tiny
model. (A whole llama.cpp study, its quantization variants run and its best re-measured, is
test_distributed.py::test_two_llamacpp_workers_run_one_study; tune compare runs another.)"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import optuna
import pytest

from tests.integration.conftest import start_engine
from tuner.core import EngineStartError
from tuner.engines import broken_rules, load_engine_spec, load_model_info, render, rule_names
from tuner.host import Hardware, find_program
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord, StreamClient, probe_endpoint
from tuner.models import make_gguf_variants
from tuner.study import load_search_space
from tuner.workload import PlannedRequest, PromptSynth, load_tokenizer

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SERVED = "tiny-llama"
CPU1 = Hardware(device="cpu", cpu_model="x", cpu_cores=1, memory_gib=24, numa_nodes=1, gpus=[])


def start(model: Path, config: dict[str, Any], log: Path) -> EngineHandle:
    """llama-server on one core, as a trial starts it; ready, or EngineStartError."""
    return start_engine("llamacpp", model, config, log, cpus="1", timeout_s=120)


@pytest.fixture(scope="module")
def server(gguf_model: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[EngineHandle]:
    handle = start(gguf_model, {"quantization": "Q8_0"},
                   tmp_path_factory.mktemp("llama-server") / "engine.log")
    yield handle
    handle.stop()


def test_gguf_variants_are_made_beside_the_model(gguf_model: Path) -> None:
    variants = make_gguf_variants(gguf_model)  # the session's fixture made them: kept as is
    assert set(variants) == {"F16", "Q8_0", "Q4_0"}
    assert all(path.parent == gguf_model for path in variants.values())
    sizes = {name: path.stat().st_size for name, path in variants.items()}
    assert sizes["Q4_0"] < sizes["Q8_0"] < sizes["F16"]


def test_the_saved_help_has_exactly_the_built_servers_flags() -> None:
    """engines/help/llama-server-b11312.txt is what the flag checks of the unit suite read."""
    program = find_program("llama-server")
    assert program is not None, "set-up builds llama-server into .venv/bin"
    live = subprocess.run([str(program), "--help"], capture_output=True, text=True,
                          timeout=30, check=True).stdout
    saved = (REPO / "engines" / "help" / "llama-server-b11312.txt").read_text()

    def flags(text: str) -> set[str]:
        return set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", text))
    assert flags(live) == flags(saved)
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                             timeout=30, check=True)
    assert "build 11312, commit 0c1e570" in version.stdout + version.stderr


def test_gguf_tokenizer_counts_prompts_exactly_like_the_harness(
        server: EngineHandle, gguf_model: Path) -> None:
    synth = PromptSynth(load_tokenizer(str(gguf_model)))
    rng = np.random.default_rng(0)
    for n in (12, 80, 700):
        prompt = synth.prompt(rng, n)
        tokens = httpx.post(server.base_url + "/tokenize", json={
            "content": prompt, "add_special": True}, timeout=30).json()["tokens"]
        assert len(tokens) == n


def test_the_defaults_run_four_slots_on_one_thread_per_engine_core(server: EngineHandle
                                                                   ) -> None:
    props = httpx.get(server.base_url + "/props", timeout=30).json()
    assert props["total_slots"] == 4  # --parallel auto
    log = server.log_text()
    assert "n_threads = 1" in log  # the engine's one core (cpu_binding.threads_knob)
    assert "kv_unified = 'true'" in log


def test_every_sampled_configuration_starts(gguf_model: Path, tmp_path: Path) -> None:
    """The space's knobs as the real server takes them: 6 configurations the search would
    try on a 1-core share, each started, answered and stopped."""
    spec = load_engine_spec("llamacpp")
    model = load_model_info(str(gguf_model))
    space = load_search_space("llamacpp").for_host(CPU1, model)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    configs: list[dict[str, Any]] = []
    while len(configs) < 6:
        config = space.sample(study.ask())
        if not broken_rules(spec.rules, rule_names(spec, config, CPU1, model, 200)):
            configs.append(config)
    for i, config in enumerate(configs):
        handle = start(gguf_model, config, tmp_path / f"{i}.log")
        try:
            done = httpx.post(handle.base_url + "/v1/completions", json={
                "model": SERVED, "prompt": "Hello", "max_tokens": 4}, timeout=60)
            assert done.status_code == 200, (config, done.text)
        finally:
            handle.stop()


def test_a_quantized_v_cache_without_flash_attention_is_refused_as_an_invalid_config(
        gguf_model: Path, tmp_path: Path) -> None:
    """The rule quantized_v_cache_needs_flash_attn, against the real server's refusal."""
    with pytest.raises(EngineStartError) as refused:
        start(gguf_model, {"kv_cache_dtype_v": "q8_0", "flash_attn": False},
              tmp_path / "engine.log")
    assert refused.value.outcome == "invalid_config"
    spec = load_engine_spec("llamacpp")
    argv = render(spec, {"kv_cache_dtype_v": "q8_0", "flash_attn": False}, device="cpu",
                  mode="process", values={"python": "p", "model": str(gguf_model),
                                          "served_name": SERVED, "host": "h", "port": "1"}).argv
    assert argv[argv.index("--flash-attn") + 1] == "off"


async def test_usage_counted_once_at_the_end_gives_one_token_per_event(server: EngineHandle
                                                                       ) -> None:
    """llama-server accepts continuous_usage_stats and ignores it: usage comes once, in the
    last event. The probe must not take that for usage in every event, or every token lands
    on the last read and ITL gets a near-zero gap per token."""
    caps = await probe_endpoint(server.base_url, SERVED, "completions", "Hello there", 3)
    assert caps.stream_usage
    assert not caps.continuous_usage
    planned = PlannedRequest(0, "chat", None, 3, 12, "Hello there")
    rec = RequestRecord(index=0, class_name="chat", prefix_group=None, input_tokens=3,
                        planned_output_tokens=12, scheduled_ns=0)
    async with StreamClient(server.base_url, model=SERVED, api="completions", caps=caps,
                            pool_size=1, timeout_s=60) as client:
        await client.send(planned, rec, 0)
    assert rec.ok, rec.error
    assert rec.output_tokens == 12  # the server's own count, from its last event
    assert list(rec.chunk_tokens) == [1] * 12
    assert len(rec.itl_ns()) == 11
