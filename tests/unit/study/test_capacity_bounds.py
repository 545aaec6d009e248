"""A capacity no failing load bracketed is a lower bound, and every output says so: never a
figure, never in a mean or a CV (issue 35, item 2)."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.unit.fakes.trials import trial
from tuner.measurement import CapacityEstimate, CapacityResult
from tuner.report import write_trials_csv
from tuner.study import TrialResult
from tuner.study.results import study_front
from tuner.tracking import MlflowTracker


def with_capacity(number: int, load: float, high: float | None) -> TrialResult:
    t = trial(number, 1.0 + number)
    assert t.best is not None
    est = CapacityEstimate(load=load, low=load, high=high, binding=None, interpolated=False,
                           output_tokens_per_s=10.0, cost_per_m_output_tokens=1.0)
    return t.model_copy(update={"max_load": load, "capacity": CapacityResult(
        steps=[t.best], best=t.best, lowest_failing_load=high, stopped_by="max_steps",
        estimate=est)})


BOUND, BRACKETED = with_capacity(1, 24.0, None), with_capacity(2, 11.2, 12.0)


def test_the_trial_line_shows_a_bound_as_a_bound() -> None:
    assert BOUND.capacity_bound
    assert not BRACKETED.capacity_bound
    assert "≤ $2/M output tokens at load ≥ 24 (not bracketed)" in BOUND.line()
    assert "at load 11.2 " in BRACKETED.line()


def test_mlflow_keeps_a_bound_apart_from_the_capacity() -> None:
    metrics = MlflowTracker._trial_metrics(BOUND)
    assert "max_load" not in metrics
    assert metrics["max_load_at_least"] == 24.0
    assert MlflowTracker._trial_metrics(BRACKETED)["max_load"] == 11.2


def test_the_trials_table_and_the_front_show_the_bound(tmp_path: Path) -> None:
    rows = list(csv.DictReader(write_trials_csv([BOUND, BRACKETED],
                                                tmp_path / "t.csv").open()))
    assert [r["max_load"] for r in rows] == ["≥ 24.0 (not bracketed)", "11.2"]
    front = {p.trial: p for p in study_front([BOUND, BRACKETED])}
    assert front[1].load_text() == "≥ 24"
    assert front[1].load_bound
