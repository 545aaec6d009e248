"""A metric is declared once, in tuner/metric_registry.py, and every consumer reads it there.

Shown with p99 end-to-end latency: its one entry in the registry makes it a bound of the
workload's ``slo:`` block (with the block's one-line errors and plausibility warning), a check
of each run's SLO verdict and of its goodput, a Pareto objective and a ``--pick`` bound, an
MLflow key of each trial, and a column of ``trials.csv``. Nothing else under tuner/ names it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.unit.fakes.trials import dist, trial
from tests.unit.metrics.test_figures import done
from tuner.loadgen import RunOutcome, ServerCaps
from tuner.metric_registry import BY_KEY, METRICS, OBJECTIVES, SLO_METRICS
from tuner.metrics import SloCheck, SloVerdict, summarise
from tuner.report import write_trials_csv
from tuner.study.results import choose, parse_pick, study_front
from tuner.tracking import MlflowTracker
from tuner.workload import Workload, implausible

TUNER = Path(__file__).resolve().parents[2] / "tuner"
E2E = BY_KEY["e2e_p99_ms"]


def workload(**slo: float) -> Workload:
    return Workload.model_validate({
        "model": "m", "classes": [{"name": "c", "weight": 1,
                                   "input": {"dist": "fixed", "value": 10},
                                   "output": {"dist": "fixed", "value": 3}}],
        "arrival": {"process": "poisson", "rate": 1}, "stop": {"requests": 3},
        "slo": {"ttft_p95_ms": 100, "itl_p95_ms": 20, **slo}, "cost": {"usd_per_hour": 3.6}})


def with_e2e(number: int, cost: float, ttft: float, e2e: float) -> object:
    """A trial whose best step was judged on p99 E2E too."""
    t = trial(number, cost, ttft=ttft)
    assert t.best is not None
    checks = [SloCheck(name=m.key, value=1.0, bound=2.0, ok=True) for m in SLO_METRICS]
    t.best = t.best.model_copy(update={"e2e_ms": dist(e2e),
                                       "slo": SloVerdict(passed=True, checks=checks)})
    return t


def test_only_the_registry_names_the_metric() -> None:
    named = sorted(str(p.relative_to(TUNER)) for p in TUNER.rglob("*.py")
                   if re.search(r"e2e_p99|e2e_ms\.p99", p.read_text(encoding="utf-8")))
    assert named == ["metric_registry.py"]


def test_every_key_is_declared_once() -> None:
    keys = [m.key for m in METRICS]
    assert len(keys) == len(set(keys))
    assert E2E in SLO_METRICS
    assert E2E in OBJECTIVES


def test_it_is_a_bound_of_the_slo_block_with_its_checks() -> None:
    assert workload(e2e_p99_ms=900).slo.bound(E2E) == 900
    assert workload().slo.bound(E2E) is None  # optional: unbounded unless given
    with pytest.raises(ValidationError, match="e2e_p99_ms"):
        workload(e2e_p99_ms=0)
    assert implausible(workload(e2e_p99_ms=2)) == [
        "slo.e2e_p99_ms is 2 ms, faster than any engine serves: seconds written as "
        "milliseconds? (2 s is 2000)"]


def test_it_is_checked_in_the_verdict_and_counted_in_goodput() -> None:
    recs = [done(0, 0, 50, [10, 10]), done(1, 500, 40, [10, 10]), done(2, 900, 40, [10, 10])]
    outcome = RunOutcome(4.0, recs, 3, 10**9, None, None)
    loose = summarise(outcome, workload(e2e_p99_ms=1000), ServerCaps())
    tight = summarise(outcome, workload(e2e_p99_ms=65), ServerCaps())
    assert [c.name for c in loose.slo.checks] == ["ttft_p95_ms", "itl_p95_ms", "error_rate",
                                                  "e2e_p99_ms"]
    assert loose.slo.passed
    assert not tight.slo.passed
    assert tight.slo.failed() == ["e2e_p99_ms"]
    assert tight.goodput_rps < loose.goodput_rps  # the 70 ms request is not good


def test_it_is_an_objective_of_the_front_and_a_pick_bound() -> None:
    # 1 is cheaper and faster to first token than 2, but 2's p99 E2E keeps 2 on the front.
    trials = [with_e2e(1, 1.0, 100, 900), with_e2e(2, 2.0, 200, 300)]
    front = study_front(trials)  # type: ignore[arg-type]
    assert [p.trial for p in front] == [1, 2]
    assert front[1].figure(E2E) == 300
    assert choose(front, parse_pick("e2e_p99_ms<=500")).trial == 2


def test_it_is_an_mlflow_key_of_each_trial() -> None:
    t = with_e2e(1, 1.0, 100, 900)
    assert MlflowTracker._trial_metrics(t)["e2e_p99_ms"] == 900  # type: ignore[arg-type]


def test_it_is_a_column_of_the_trials_table(tmp_path: Path) -> None:
    path = write_trials_csv([with_e2e(1, 1.0, 100, 900), trial(2, None)],  # type: ignore[list-item]
                            tmp_path / "trials.csv")
    rows = list(csv.DictReader(path.open()))
    assert rows[0]["e2e_p99_ms"] == "900.0"
    assert rows[1]["e2e_p99_ms"] == ""
