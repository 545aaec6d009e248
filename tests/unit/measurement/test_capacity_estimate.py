"""The capacity between the bracketing steps: where the binding SLO crosses its bound."""

from __future__ import annotations

import pytest

from tests.unit.fakes.summaries import fake_summary
from tuner.measurement.capacity import estimate
from tuner.metrics import RunSummary, SloCheck, SloVerdict


def step(load: float, ttft_p95: float, itl_p95: float, *, bound_ttft: float = 500,
         bound_itl: float = 50, stopped: str | None = None) -> RunSummary:
    checks = [SloCheck(name="ttft_p95_ms", value=ttft_p95, bound=bound_ttft,
                       ok=ttft_p95 <= bound_ttft),
              SloCheck(name="itl_p95_ms", value=itl_p95, bound=bound_itl,
                       ok=itl_p95 <= bound_itl)]
    passed = all(c.ok for c in checks) and stopped is None
    return fake_summary(load, passed).model_copy(update={
        "slo": SloVerdict(passed=passed, checks=checks), "stopped_early": stopped,
        "output_token_throughput": 100 * load, "usd_per_hour": 3.6})


def test_the_binding_slo_is_interpolated_between_the_steps() -> None:
    low, high = step(4, 300, 30), step(6, 700, 45)  # TTFT crosses 500 halfway
    found = estimate([low, high], low, 6)
    assert found is not None
    assert found.interpolated
    assert found.binding == "ttft_p95_ms"
    assert found.load == pytest.approx(5.0)
    assert (found.low, found.high) == (4, 6)
    assert found.output_tokens_per_s == pytest.approx(500)
    assert found.cost_per_m_output_tokens == pytest.approx(3.6 / 3600 / 500 * 1e6)


def test_the_lower_crossing_binds() -> None:
    low, high = step(4, 300, 30), step(8, 900, 90)  # TTFT at 5, ITL at 5.
    found = estimate([low, high], low, 8)
    assert found is not None
    assert found.binding == "itl_p95_ms"
    assert found.load == pytest.approx(4 + 4 * 20 / 60)


def test_a_step_stopped_early_gives_the_passing_load() -> None:
    low, high = step(4, 300, 30), step(8, 900, 90, stopped="queue only grows")
    found = estimate([low, high], low, 8)
    assert found is not None
    assert not found.interpolated
    assert found.load == 4
    assert found.binding == "ttft_p95_ms, itl_p95_ms"


def test_no_failure_means_no_binding_slo() -> None:
    low = step(4, 300, 30)
    found = estimate([low], low, None)
    assert found is not None
    assert (found.load, found.high, found.binding) == (4, None, None)


def test_the_engine_falling_behind_binds_too() -> None:
    low = step(4, 300, 30)
    high = step(6, 450, 40)
    keep = SloCheck(name="throughput", value=0.8, bound=0.9, ok=False)
    high = high.model_copy(update={"slo": SloVerdict(passed=False,
                                                     checks=[*high.slo.checks, keep])})
    low = low.model_copy(update={"slo": SloVerdict(passed=True, checks=[
        *low.slo.checks, SloCheck(name="throughput", value=1.0, bound=0.9, ok=True)])})
    found = estimate([low, high], low, 6)
    assert found is not None
    assert found.binding == "throughput"
    assert found.load == pytest.approx(5.0)
