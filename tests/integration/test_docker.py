"""The Docker launcher through a real daemon: vLLM (CPU) in a locally built image."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from tests.integration.conftest import IMAGE, DockerStudy, ours, tune_cmd, wait_until

# They measure: they wait until set-up's background compile is done (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine_to_itself")]


@pytest.fixture(scope="module", autouse=True)
def _daemon(client: docker.DockerClient) -> None:
    """Every test here needs the daemon (or skips, saying why there is none)."""


def test_missing_image_is_one_line(tiny_model: Path, tmp_path: Path) -> None:
    cmd = tune_cmd(tiny_model, tmp_path, "missing")
    cmd[cmd.index(IMAGE)] = "tuner-test/not-built:0"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "image tuner-test/not-built:0 is not here and cannot be pulled" in lines[0]


def test_container_study_classifies_deaths_and_goes_on(docker_study: DockerStudy,
                                                       client: docker.DockerClient) -> None:
    tmp_path = docker_study.out
    assert docker_study.returncode == 0, docker_study.stderr[-3000:]
    trials = {p.stem: json.loads(p.read_text())
              for p in (tmp_path / "dock" / "trials").glob("*.json")}
    assert trials["trial-000"]["outcome"] == "crashed_during_load"
    assert trials["trial-001"]["outcome"] == "invalid_config"  # died during start-up
    assert "max_model_len" in (trials["trial-001"]["log_tail"] or "")
    ok = [t for t in trials.values() if t["outcome"] == "ok"]
    assert len(ok) == 1  # three launched: the defaults, the refused one, one that served
    launch = ok[0]["launch"]
    assert launch["launcher"] == "docker"
    assert launch["image"] == IMAGE
    assert launch["image_digest"].startswith("sha256:")
    spec = launch["container_spec"]
    assert spec["network_mode"] == "host"
    assert spec["labels"]["tuner.study"] == "dock"
    assert not ours(client, docker_study.pid), "a container of the study was left behind"
    summary = json.loads((tmp_path / "dock" / "summary.json").read_text())
    assert summary["best_trial"]["number"] == ok[0]["number"]


def test_sigterm_and_sigkill_then_cleanup_remove_only_ours(image: str,
                                                          client: docker.DockerClient,
                                                          tiny_model: Path,
                                                          tmp_path: Path) -> None:
    foreign = client.containers.run(image, entrypoint=["sleep", "600"], detach=True,
                                    network_mode="host", labels={"owner": "someone-else"})
    try:
        term = subprocess.Popen(tune_cmd(tiny_model, tmp_path, "term", "--trials", "1"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: ours(client, term.pid), 120, "the first container")
        term.send_signal(signal.SIGTERM)
        assert term.wait(timeout=120) == 130
        assert not ours(client, term.pid)

        killed = subprocess.Popen(tune_cmd(tiny_model, tmp_path, "kill", "--trials", "1"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: ours(client, killed.pid), 120, "the first container")
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert ours(client, killed.pid), "SIGKILL cannot clean up; the container stays"
        done = subprocess.run([sys.executable, "-m", "tuner", "cleanup"], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "removed container" in done.stdout
        assert not ours(client, killed.pid)
        foreign.reload()
        assert foreign.status == "running"
    finally:
        foreign.remove(force=True)
