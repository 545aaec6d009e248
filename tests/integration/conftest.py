"""A real vLLM (CPU build) on the project's tiny model, started by the project's own launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from docker.errors import DockerException

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


REPO = Path(__file__).resolve().parents[2]
IMAGE = "tuner-test/vllm-cpu:local"


@pytest.fixture(scope="module")
def client() -> docker.DockerClient:
    """The Docker daemon, or a skip that says why there is none."""
    try:
        found = docker.from_env()
        found.ping()
    except (DockerException, OSError) as exc:
        pytest.skip(f"no Docker daemon reachable: {exc}")
    return found


@pytest.fixture(scope="module")
def image(client: docker.DockerClient) -> str:
    """The test image (vLLM's CPU build in a Debian root), built without a registry."""
    subprocess.run(["bash", str(REPO / "tests" / "images" / "build-vllm-cpu.sh"), IMAGE],
                   check=True, timeout=900)
    return IMAGE


SECRET = "hf_s3cr3t_do_not_log_9431"


@dataclass
class Study:
    done: subprocess.CompletedProcess[str]
    out: Path        # what `tune compare --out` takes to reuse this study
    run_dir: Path    # the study's own folder
    tracking: Path   # the MLflow store


@pytest.fixture(scope="session")
def vllm_study(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Study:
    """A short real study of vLLM, shared: the tune test checks it, the compare test reuses it.
    It is laid out the way `tune compare` lays out its studies."""
    out = tmp_path_factory.mktemp("studies")
    folder = out / "compare-workload-ci"
    env = {**os.environ, "TUNER_HF_TOKEN": SECRET}
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "--engine", "vllm",
         "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
         "--model", str(tiny_model), "--trials", "3", "--remeasure-top", "0",
         "--enqueue", str(REPO / "tests" / "data" / "enqueue-ci.yaml"),
         "--search-space", str(REPO / "tests" / "data" / "space-ci.yaml"),
         "--out", str(folder), "--study-name", "vllm-workload-ci", "--seed", "3",
         "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"],
        capture_output=True, text=True, timeout=1500, env=env)
    return Study(done, out, folder / "vllm-workload-ci", folder / "mlflow.db")
