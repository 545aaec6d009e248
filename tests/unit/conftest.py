"""Unit tests of a study's mechanics (budgets, workers, outages, intensification) search with
TPE: the default, Optuna's GP sampler, fits a model on every ask, which cost the unit suite
about 27 s (85 -> 112 s on a 2-core AMD EPYC); tests/unit/search/test_samplers.py checks the
default itself, and the integration tests' studies run it."""

from __future__ import annotations

import pytest

from tuner.search import samplers


@pytest.fixture(autouse=True)
def _studies_search_with_tpe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "BENCHMARK_CHOICE", "tpe")
