import pytest
from scipy import stats

from tuner.metrics.spread import spread


@pytest.mark.parametrize("values", [[4.0, 4.5], [5.5, 6.0, 6.0, 3.75, 6.0], list(range(1, 40))])
def test_spread_matches_scipy(values: list[float]) -> None:
    s = spread(values)
    assert s is not None
    low, high = stats.t.interval(0.95, len(values) - 1, loc=stats.tmean(values),
                                 scale=stats.sem(values))
    assert s.low == pytest.approx(low, rel=1e-3)
    assert s.high == pytest.approx(high, rel=1e-3)
    assert s.cv == pytest.approx(stats.tstd(values) / stats.tmean(values))


def test_one_value_has_no_spread() -> None:
    s = spread([3.0, float("nan")])
    assert s is not None
    assert (s.n, s.mean, s.cv) == (1, 3.0, None)


def test_a_positive_quantity_s_interval_below_zero_is_an_upper_bound_only() -> None:
    s = spread([0.48, 1.28])  # two capacities: t(1) = 12.7 reaches below zero
    assert s is not None
    assert s.high is not None
    assert s.low is None
    assert s.high == pytest.approx(0.88 + 12.706 * 0.5657 / 2 ** 0.5, rel=1e-3)
    assert s.text() == ("0.88 (95% CI: at most 6.igs; 2 values bound it only from above, "
                        "CV 64.3%, n=2)").replace("6.igs", f"{s.high:.3g}")


def test_a_quantity_that_can_be_negative_keeps_its_lower_end() -> None:
    s = spread([-1.0, 2.0])
    assert s is not None
    assert s.low is not None
    assert s.low < -1.0
