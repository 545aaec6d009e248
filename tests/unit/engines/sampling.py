"""Configurations drawn from an engine's search space, as a study would draw them."""

from __future__ import annotations

from typing import Any

import optuna

from tuner.engines.model_info import ModelInfo
from tuner.host import Hardware
from tuner.study import load_search_space


def sample_configs(engine: str, hw: Hardware, model: ModelInfo, *, n: int, seed: int
                   ) -> list[dict[str, Any]]:
    space = load_search_space(engine).for_host(hw, model)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(space.sample(trial))
        study.tell(trial, 0.0)
    return out
