"""Order statistics read in passes are the ones a sort gives; percentiles are numpy's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuner.metrics.figures import MS, dist_ms, streamed_dist_ms
from tuner.metrics.selection import lerp, order_statistics, percentile_ranks

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60)
@given(st.lists(finite, min_size=1, max_size=300), st.integers(1, 64), st.data())
def test_order_statistics_are_the_sorted_values(values: list[float], hold: int,
                                                data: st.DataObject) -> None:
    arr = np.array(values, dtype=np.float64)
    ranks = data.draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=6))
    pieces = data.draw(st.integers(1, 5))
    got = order_statistics(lambda: iter(np.array_split(arr, pieces)), ranks, hold=hold)
    ordered = np.sort(arr)
    assert {r: got[r] == ordered[r] for r in ranks} == {r: True for r in ranks}


def test_many_equal_values_are_found_without_holding_them() -> None:
    arr = np.full(10_000, 2.5)
    arr[:3] = [1.0, 9.0, -4.0]
    got = order_statistics(lambda: iter([arr[:5000], arr[5000:]]), [0, 1, 5000, 9999], hold=8)
    assert got == {0: -4.0, 1: 1.0, 5000: 2.5, 9999: 9.0}


@given(st.integers(1, 100_000), st.lists(st.floats(0, 100), min_size=1, max_size=5))
def test_percentile_ranks_interpolate_as_numpy(n: int, percents: list[float]) -> None:
    arr = np.sort(np.random.default_rng(n).lognormal(1, 2, n))
    expected = np.percentile(arr, percents)
    got = [lerp(arr[a], arr[b], t) for a, b, t in percentile_ranks(n, percents)]
    assert got == expected.tolist()


@pytest.mark.parametrize("n", [1_000, 40_001])
def test_a_streamed_distribution_is_the_held_one(n: int) -> None:
    values = np.round(np.random.default_rng(n).lognormal(15, 0.6, n))  # ns, with ties
    held = dist_ms(values.copy())
    streamed = streamed_dist_ms(lambda: iter(np.array_split(values, 9)), hold=500)
    assert streamed.model_dump(exclude={"mean"}) == held.model_dump(exclude={"mean"})
    assert streamed.mean == pytest.approx(held.mean, rel=1e-12)
    assert streamed_dist_ms(lambda: iter([values]), hold=n) == held  # held: to the bit
    assert streamed.max == values.max() / MS
