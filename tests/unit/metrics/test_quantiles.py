"""Distribution-free intervals: order statistics for a percentile, Clopper-Pearson for a rate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tuner.metrics.quantiles import (
    binom_cdf,
    min_samples_for_upper_bound,
    quantile_interval,
    rate_lower_bound,
)


@pytest.mark.parametrize(("k", "n", "p"), [(0, 10, 0.1), (3, 20, 0.05), (57, 60, 0.95),
                                           (150, 200, 0.8)])
def test_binomial_cdf_matches_scipy(k: int, n: int, p: float) -> None:
    assert binom_cdf(k, n, p) == pytest.approx(stats.binom.cdf(k, n, p), rel=1e-9)


def test_the_p95_needs_59_values_for_an_upper_bound() -> None:
    assert min_samples_for_upper_bound(0.95, 0.95) == 59
    assert quantile_interval(list(range(40)))[1] is None
    assert quantile_interval(list(range(100)))[1] is not None


@pytest.mark.parametrize("n", [80, 150, 1000])
def test_p95_intervals_cover_the_true_p95(n: int) -> None:
    rng = np.random.default_rng(n)
    truth = -np.log(0.05)  # the exponential's p95
    hits = 0
    for _ in range(300):
        low, high = quantile_interval(rng.exponential(size=n).tolist(), 0.95, 0.95)
        hits += low is not None and high is not None and low <= truth <= high
    assert hits / 300 >= 0.93


@pytest.mark.parametrize(("k", "n"), [(2, 16), (4, 10), (12, 12), (6, 60)])
def test_rate_lower_bound_matches_clopper_pearson(k: int, n: int) -> None:
    expected = stats.beta.ppf(0.01, k, n - k + 1)
    assert rate_lower_bound(k, n, 0.99) == pytest.approx(expected, abs=1e-6)
