"""A real vLLM (CPU build) on the project's tiny model, started by the project's own launcher."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tuner.engines.spec import load_engine_spec
from tuner.launch.base import EngineHandle, LaunchRequest
from tuner.launch.process import ProcessLauncher
from tuner.launch.readiness import wait_ready

SERVED = "tiny-llama"


def start_vllm(model: Path, log_dir: Path, **config: object) -> EngineHandle:
    spec = load_engine_spec("vllm")
    handle = ProcessLauncher().start(LaunchRequest(
        spec=spec, config={"eager": True, "kv_cache_space_gib": 2, **config}, model=str(model),
        served_name=SERVED, log_path=log_dir / "vllm.log"))
    try:
        wait_ready(handle, spec, SERVED, timeout_s=600)
    except BaseException:
        handle.stop()
        raise
    return handle


@pytest.fixture(scope="module")
def vllm(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineHandle]:
    handle = start_vllm(tiny_model, tmp_path_factory.mktemp("vllm"))
    yield handle
    handle.stop()
