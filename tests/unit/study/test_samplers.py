"""Which sampler a study gets: TPE unless told, and one line naming the fix when the sampler
asked for cannot run here (Optuna's GP sampler needs torch)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.core import ConfigError, validate
from tuner.study import samplers
from tuner.study.config import StudyConfig
from tuner.study.samplers import check_runnable, make_sampler


def study_options(tmp_path: Path, **extra: object) -> dict[str, object]:
    return dict(engine="vllm", workload=tmp_path / "w.yaml", model="m", **extra)


def test_a_study_searches_with_tpe_unless_told(tmp_path: Path) -> None:
    assert validate(StudyConfig, study_options(tmp_path), "options").sampler == "tpe"
    assert isinstance(make_sampler("tpe", seed=0, trials=12), optuna.samplers.TPESampler)


def test_asking_for_gp_without_torch_names_the_fix(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "torch_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"options: sampler: sampler 'gp' needs torch, which "
                       r"is not installed here: pip install 'tuner\[gp\]', or use --sampler "
                       "tpe"):
        validate(StudyConfig, study_options(tmp_path, sampler="gp"), "options")
    with pytest.raises(ConfigError, match="needs torch"):  # a worker joining a GP study
        make_sampler("gp", seed=0, trials=12)
    assert check_runnable("tpe") == "tpe"


def test_gp_runs_where_torch_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "torch_installed", lambda: True)
    assert isinstance(make_sampler("gp", seed=0, trials=12), optuna.samplers.GPSampler)


def test_an_unknown_sampler_is_bad_input_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown sampler 'smac'; use one of: tpe, "):
        check_runnable("smac")


def test_cmaes_models_the_numeric_knobs_and_draws_the_rest() -> None:
    sampler = make_sampler("cmaes", seed=0, trials=12)
    assert isinstance(sampler, optuna.samplers.CmaEsSampler)
    study = optuna.create_study(sampler=sampler)
    for _ in range(8):  # past its random start: a categorical beside two ints still runs
        trial = study.ask()
        x, y = trial.suggest_int("slots", 1, 16), trial.suggest_int("batch", 64, 512, log=True)
        study.tell(trial, x + y / 64 + (trial.suggest_categorical("fa", [False, True]) or 0))
    assert len(study.trials) == 8
