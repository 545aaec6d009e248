"""A re-measured start's cost is its capacity search's: the best step's records only, their
throughput scaled to the estimated capacity, as the trial's own cost is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.fakes.summaries import fake_summary
from tuner.loadgen import RequestRecord, write_records_csv
from tuner.measurement import CapacityEstimate, CapacityResult
from tuner.metrics import cost_per_million
from tuner.study.outcome import TrialResult
from tuner.study.repeats.remeasure import cost_of, met_slos, run_of

S = 1_000_000_000


def step_records(step: int, n: int, tokens: int, *, warmup: bool = False
                 ) -> list[RequestRecord]:
    """``n`` requests one per second, each ``tokens`` long, done a second after it was sent."""
    out = []
    for i in range(n):
        sent = (100 * step + i) * S
        out.append(RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=8,
                                 planned_output_tokens=tokens, scheduled_ns=sent, sent_ns=sent,
                                 first_token_ns=sent + S // 10, done_ns=sent + S,
                                 chunk_ns=[sent + S // 10], chunk_tokens=[tokens],
                                 output_tokens=tokens, step=step, warmup=warmup))
    return out


def searched(tmp_path: Path) -> TrialResult:
    """A start whose search passed loads 4 and 8, failed 12, and put the capacity at 10."""
    steps = [fake_summary(4.0, True), fake_summary(8.0, True), fake_summary(12.0, False)]
    estimate = CapacityEstimate(load=10.0, low=8.0, high=12.0, binding="itl_p95_ms",
                                interpolated=True, output_tokens_per_s=0.0,
                                cost_per_m_output_tokens=None)
    path = tmp_path / "remeasure-003-0.csv"
    write_records_csv(step_records(0, 9, 50, warmup=True) + step_records(0, 10, 10)
                      + step_records(1, 10, 20) + step_records(2, 10, 30), path)
    return TrialResult(number=3, config={"k": 1}, defaults=False, outcome="ok", max_load=10.0,
                       capacity=CapacityResult(steps=steps, best=steps[1],
                                               lowest_failing_load=12.0, stopped_by="tolerance",
                                               estimate=estimate),
                       records_path=str(path))


def test_the_cost_counts_the_best_step_scaled_to_the_capacity(tmp_path: Path) -> None:
    run = run_of("vllm", searched(tmp_path), 0, usd_per_hour=3.6)
    assert (run.load, run.step, run.scale, run.binding) == (10.0, 1, 1.25, "itl_p95_ms")
    assert met_slos(run)
    cost, samples = cost_of([run], seed=0)
    # step 1: 10 requests of 20 tokens over 10 s (first send to last completion) = 20 tokens/s
    expected = cost_per_million(3.6, 20.0 * 1.25)
    assert cost is not None
    assert cost.value == pytest.approx(expected)
    assert cost.low == pytest.approx(expected)
    assert cost.high == pytest.approx(expected)


def test_a_start_that_met_the_slos_at_no_load_has_no_cost(tmp_path: Path) -> None:
    result = searched(tmp_path).model_copy(update={
        "outcome": "slo_infeasible", "detail": "no load met the SLOs", "max_load": None})
    run = run_of("vllm", result, 1, usd_per_hour=3.6)
    assert not met_slos(run)
    assert run.failure == "slo_infeasible: no load met the SLOs"
    assert cost_of([run], seed=0)[0] is None
