"""``tune export --format docker`` run for real: the good trial of the shared study of vLLM (CPU)
in the test image through the Docker launcher (conftest's ``docker_study``), exported as a
``docker run`` line, run by a shell as a person would paste it, serves completions; ``tune
cleanup`` leaves the container alone."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time

import docker
import httpx
import pytest
from docker.errors import NotFound

from tests.integration.conftest import IMAGE, SERVED, DockerStudy
from tuner.launch import free_port

# They measure: they wait until set-up's background compile is done (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine_to_itself")]


def tune(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner", *args], capture_output=True,
                          text=True, timeout=timeout)


def wait_serving(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/v1/models", timeout=5).status_code == 200:
                return
        time.sleep(2)
    pytest.fail(f"the exported container did not serve {url} within {timeout:.0f} s")


def test_the_exported_docker_run_serves_requests(docker_study: DockerStudy,
                                                 client: docker.DockerClient) -> None:
    assert docker_study.returncode == 0, docker_study.stderr[-3000:]
    folder = docker_study.out / "dock"
    served = [json.loads(p.read_text()) for p in (folder / "trials").glob("*.json")]
    (good,) = [t["number"] for t in served if t["outcome"] == "ok"]
    port = free_port()
    name = f"tuner-export-test-{port}"
    exported = tune("export", "--study", str(folder), "--format", "docker", "--trial", str(good),
                    "--port", str(port), "--name", name, "--host-network")
    assert exported.returncode == 0, exported.stderr
    assert f" {IMAGE} /models/model " in exported.stdout.replace("\\\n", " ")  # the trial's
    try:
        started = subprocess.run(["bash", "-c", exported.stdout], capture_output=True,
                                 text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        url = f"http://127.0.0.1:{port}"
        wait_serving(url, timeout=600)
        answer = httpx.post(f"{url}/v1/completions", timeout=120, json={
            "model": SERVED, "prompt": "The tuner exported", "max_tokens": 8})
        assert answer.status_code == 200, answer.text
        assert answer.json()["usage"]["completion_tokens"] > 0
        container = client.containers.get(name)
        assert not [k for k in container.labels if k.startswith("tuner.")]
        assert container.attrs["HostConfig"]["ShmSize"] == 16 * 1024**3
        assert container.attrs["HostConfig"]["IpcMode"] == "host"
        cleaned = tune("cleanup")
        assert cleaned.returncode == 0, cleaned.stderr
        container.reload()
        assert container.status == "running"  # not ours to remove: a deployment
    finally:
        with contextlib.suppress(NotFound):
            client.containers.get(name).remove(force=True)
