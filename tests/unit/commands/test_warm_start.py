"""A study can start from another study's best configurations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.commands.tune import warm_start_configs
from tuner.core import ConfigError
from tuner.study import TrialResult


def study_dir(tmp_path: Path, engine: str = "vllm") -> Path:
    (tmp_path / "trials").mkdir(parents=True)
    (tmp_path / "config.json").write_text(json.dumps({"engine": engine}))
    costs = {0: 1.0, 1: 0.5, 2: None, 3: 0.7, 4: 0.9, 5: 0.6}
    for n, cost in costs.items():
        result = TrialResult(number=n, config={"max_batch_size": 8 * (n + 1), "eager": None},
                             defaults=n == 0, outcome="ok" if cost else "oom",
                             cost_per_m_output_tokens=cost)
        (tmp_path / "trials" / f"trial-{n:03d}.json").write_text(result.model_dump_json())
    return tmp_path


def test_the_cheapest_configurations_of_the_other_study_go_first(tmp_path: Path) -> None:
    configs = warm_start_configs(study_dir(tmp_path), "vllm")
    assert configs == [{"max_batch_size": 16}, {"max_batch_size": 48}, {"max_batch_size": 32}]


def test_another_engines_study_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="a study of 'llamacpp', not 'vllm'"):
        warm_start_configs(study_dir(tmp_path, "llamacpp"), "vllm")
    with pytest.raises(ConfigError, match="not a study folder"):
        warm_start_configs(tmp_path / "nowhere", "vllm")
