"""Which sampler a study gets: the benchmark's choice (GP) where torch is installed, TPE
elsewhere, and one line naming the fix when a sampler cannot run here."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.errors import ConfigError
from tuner.search import samplers
from tuner.search.samplers import (
    check_runnable,
    default_sampler,
    describe_sampler,
    make_sampler,
)
from tuner.search.study_config import StudyConfig
from tuner.validation import validate


@pytest.fixture
def without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "BENCHMARK_CHOICE", "gp")  # as shipped (see ../conftest.py)
    monkeypatch.setattr(samplers, "torch_installed", lambda: False)


@pytest.fixture
def with_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "BENCHMARK_CHOICE", "gp")  # as shipped (see ../conftest.py)
    monkeypatch.setattr(samplers, "torch_installed", lambda: True)


def study_options(tmp_path: Path, **extra: object) -> dict[str, object]:
    return dict(engine="vllm", workload=tmp_path / "w.yaml", model="m", **extra)


@pytest.mark.usefixtures("with_torch")
def test_the_default_is_the_benchmarks_choice_where_torch_is_installed(tmp_path: Path) -> None:
    assert default_sampler() == "gp"
    assert validate(StudyConfig, study_options(tmp_path), "options").sampler == "gp"
    assert describe_sampler("gp") == "gp"
    assert isinstance(make_sampler("gp", seed=0, trials=12), optuna.samplers.GPSampler)


@pytest.mark.usefixtures("without_torch")
def test_without_torch_the_default_is_tpe_and_the_study_says_why(tmp_path: Path) -> None:
    assert default_sampler() == "tpe"
    assert validate(StudyConfig, study_options(tmp_path), "options").sampler == "tpe"
    assert describe_sampler("tpe") == (
        "tpe (gp, the search-efficiency benchmark's choice, needs torch: pip install "
        "'tuner[gp]')")
    assert describe_sampler("random") == "random"


@pytest.mark.usefixtures("without_torch")
def test_asking_for_gp_without_torch_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"options: sampler: sampler 'gp' needs torch, which "
                       r"is not installed here: pip install 'tuner\[gp\]', or use --sampler "
                       "tpe"):
        validate(StudyConfig, study_options(tmp_path, sampler="gp"), "options")
    with pytest.raises(ConfigError, match="needs torch"):  # a worker joining a GP study
        make_sampler("gp", seed=0, trials=12)
    assert check_runnable("tpe") == "tpe"


def test_an_unknown_sampler_is_bad_input_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown sampler 'smac'; use one of: tpe, "):
        check_runnable("smac")
