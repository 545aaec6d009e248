import numpy as np
import pytest

from tuner.metrics.bootstrap import RunTokens, cost_samples, interval, point_cost, ratio_interval


def test_cost_interval_covers_the_point_and_narrows_with_data() -> None:
    rng = np.random.default_rng(0)
    small = [RunTokens(rng.integers(50, 150, 30).astype(float), 10.0)]
    big = [RunTokens(rng.integers(50, 150, 3000).astype(float), 1000.0)]
    for runs in (small, big):
        p = point_cost(runs, 3.6)
        iv = interval(p, cost_samples(runs, 3.6, n=500))
        assert iv.low <= p <= iv.high
    width = [interval(point_cost(r, 3.6), cost_samples(r, 3.6, n=500)) for r in (small, big)]
    assert (width[1].high - width[1].low) < (width[0].high - width[0].low)


def test_point_cost_formula() -> None:
    # 1000 tokens in 1 s at $3.6/h = $0.001/s -> $1 per million
    assert point_cost([RunTokens(np.full(10, 100.0), 1.0)], 3.6) == pytest.approx(1.0)


def test_ratio_of_equal_costs_includes_one() -> None:
    rng = np.random.default_rng(1)
    runs_a = [RunTokens(rng.integers(50, 150, 200).astype(float), 20.0) for _ in range(3)]
    runs_b = [RunTokens(rng.integers(50, 150, 200).astype(float), 20.0) for _ in range(3)]
    a, b = cost_samples(runs_a, 1.0, seed=1), cost_samples(runs_b, 1.0, seed=2)
    iv = ratio_interval(point_cost(runs_a, 1.0), a, point_cost(runs_b, 1.0), b)
    assert iv.low < 1 < iv.high
