"""A study folder read back: what the host wrote, the trials, the front the summary keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.fakes.trials import trial
from tuner.core import ConfigError
from tuner.host import Hardware
from tuner.study.results.pareto import study_front
from tuner.study.results.study_folder import read_study_folder, write_host
from tuner.study.run_folder import RunFolder

GPU_HOST = Hardware(device="gpu", cpu_model="x", cpu_cores=64, memory_gib=512, numa_nodes=2,
                    gpus=[])


def test_the_host_file_tune_writes_is_the_one_read_back(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"engine": "vllm", "model": "m"}))
    write_host(RunFolder(tmp_path), hardware=GPU_HOST, served_name="llama",
               image="vllm/vllm-openai:x", engine_version="vllm 0.32.0")
    folder = read_study_folder(tmp_path)
    assert folder.device == "gpu"
    assert folder.host["served_name"] == "llama"
    assert folder.host["image"] == "vllm/vllm-openai:x"


def test_points_join_this_hosts_trials_and_the_summarys_front(tmp_path: Path) -> None:
    """Another worker's trial on the front (kept in summary.json) is a point too."""
    (tmp_path / "config.json").write_text(json.dumps({"engine": "vllm", "model": "m"}))
    (tmp_path / "trials").mkdir()
    mine = [trial(0, 2.0, ttft=300, defaults=True), trial(2, 3.0, ttft=900)]
    for t in mine:
        (tmp_path / "trials" / f"trial-{t.number:03d}.json").write_text(t.model_dump_json())
    theirs = trial(1, 1.0, ttft=200)
    front = study_front([*mine, theirs])
    (tmp_path / "summary.json").write_text(json.dumps({
        "pareto": [p.model_dump(mode="json") for p in front], "hardware": "CPU x",
        "best_trial": theirs.model_dump(mode="json")}))
    folder = read_study_folder(tmp_path)
    assert [p.trial for p in folder.points()] == [0, 1, 2]
    assert [p.trial for p in folder.front()] == [1]
    assert folder.device == "cpu"  # no host.json: from the summary's hardware line
    winner = folder.winner()
    assert winner is not None
    assert winner.number == 1


def test_not_a_study_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a study folder"):
        read_study_folder(tmp_path)
