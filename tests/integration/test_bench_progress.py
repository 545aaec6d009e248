"""A piped `tune bench` against a real llama.cpp server (llama-server, the tiny model's
GGUF) prints progress lines while it runs, not everything at the end."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli_runner import TUNE
from tuner.engines import load_engine_spec
from tuner.launch import EngineHandle, LaunchRequest, ProcessLauncher, wait_ready

pytestmark = pytest.mark.integration
SERVED = "tiny-llama"


@pytest.fixture(scope="module")
def llamacpp(gguf_model: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[EngineHandle]:
    spec = load_engine_spec("llamacpp")
    handle = ProcessLauncher().start(LaunchRequest(
        spec=spec, config={"quantization": "Q8_0"}, model=str(gguf_model), served_name=SERVED,
        log_path=tmp_path_factory.mktemp("llamacpp") / "llamacpp.log"))
    try:
        wait_ready(handle, spec, SERVED, timeout_s=300)
        yield handle
    finally:
        handle.stop()


def test_piped_capacity_search_prints_a_line_per_step_while_it_runs(
        llamacpp: EngineHandle, gguf_model: Path, tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "name: piped\nmodel: tiny-llama\n"
        "classes:\n  - {name: c, weight: 1, input: {dist: fixed, value: 32}, "
        "output: {dist: fixed, value: 8}}\n"
        "arrival: {process: concurrency, concurrency: 1}\nstop: {duration_s: 3}\n"
        "slo: {ttft_p95_ms: 5000, itl_p95_ms: 2000}\ncost: {usd_per_hour: 1.0}\n"
        "warmup: {engine: {enabled: false}}\n"
        "capacity: {max_steps: 2, step_duration_s: 3}\n")
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as err:
        proc = subprocess.Popen([*TUNE, "bench", "--endpoint", llamacpp.base_url, "--workload",
                                 str(workload), "--tokenizer", str(gguf_model),
                                 "--find-capacity"],
                                stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        seen: list[str] = []
        while not (line := proc.stdout.readline()).startswith("step 1, "):
            assert line, f"no step line before the end: {seen}"
            seen.append(line)
        running_then = proc.poll() is None
        proc.stdout.read()
        proc.wait(timeout=300)
    assert running_then, "the first step's line came only when the command had ended"
    assert proc.returncode == 0, errors.read_text()
    assert "phase: probing endpoint\n" in seen
    assert "sent" in line
    assert "p95 TTFT" in line
