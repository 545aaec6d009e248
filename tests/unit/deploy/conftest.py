"""Study folders as ``tune`` leaves them, made up from trial results (nothing is run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes.trials import trial
from tuner.study import TrialResult
from tuner.study.results import study_front

MakeStudy = Callable[..., Path]

VLLM_TRIALS = [
    trial(0, 2.0, ttft=300, itl=30, defaults=True,
          config={"max_batch_size": 128, "prefix_caching": True, "kv_cache_space_gib": 4}),
    trial(1, 1.0, ttft=900, itl=40, config={"max_batch_size": 64, "chunked_prefill": False,
                                            "max_batched_tokens": 8192,
                                            "kv_cache_space_gib": 8}),
    trial(2, 1.5, ttft=400, itl=25, config={"max_batch_size": 32, "prefix_caching": False,
                                            "kv_cache_space_gib": 4}),
    trial(3, None),
]


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "models" / "tiny-llama"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


@pytest.fixture
def make_study(tmp_path: Path, model_dir: Path) -> MakeStudy:
    def make(trials: list[TrialResult] = VLLM_TRIALS, *, engine: str = "vllm",
             device: str = "cpu", model: str | None = None, image: str | None = None,
             winner: int | None = None, name: str = "vllm-chat") -> Path:
        folder = tmp_path / "tune-runs" / name
        (folder / "trials").mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({
            "engine": engine, "model": model or str(model_dir), "study_name": name,
            "workload": "w.yaml", "device": "auto", "image": None, "image_tag": None,
            "served_name": None, "launcher": "docker" if image else "process"}))
        (folder / "host.json").write_text(json.dumps({
            "hardware": {"device": device}, "served_name": "tiny-llama", "image": image}))
        for t in trials:
            (folder / "trials" / f"trial-{t.number:03d}.json").write_text(t.model_dump_json())
        if winner is not None:
            best = next(t for t in trials if t.number == winner)
            summary: dict[str, Any] = {
                "best_trial": best.model_dump(mode="json"), "hardware": "CPU x",
                "pareto": [p.model_dump(mode="json") for p in study_front(trials)]}
            (folder / "summary.json").write_text(json.dumps(summary))
        return folder
    return make
