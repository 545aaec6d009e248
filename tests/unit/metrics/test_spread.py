import pytest
from scipy import stats

from tuner.metrics.spread import spread


@pytest.mark.parametrize("values", [[4.0, 5.0], [5.5, 6.0, 6.0, 3.75, 6.0], list(range(1, 40))])
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
