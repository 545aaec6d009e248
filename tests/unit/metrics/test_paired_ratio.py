"""A side-by-side comparison's verdict: a ratio's interval from pairs, decided at a resolution."""

from __future__ import annotations

import math

import pytest

from tuner.metrics.paired_ratio import (
    PooledSpread,
    decide,
    floored,
    paired_verdict,
    pooled_spread,
    step_floor,
)


@pytest.mark.parametrize(("low", "high", "kind"), [
    (1.08, 1.16, "better"), (0.55, 0.70, "worse"), (0.98, 1.04, "equivalent"),
    (0.97, 1.16, "unresolved"), (1.02, 1.08, "unresolved"), (0.93, 0.97, "unresolved"),
])
def test_decided_only_outside_or_wholly_inside_the_resolution(low: float, high: float,
                                                             kind: str) -> None:
    assert decide(low, high, 0.05) == kind


def test_the_interval_comes_from_the_pairs_or_from_the_pooled_spread() -> None:
    logs = [math.log(r) for r in (1.10, 1.14, 1.12, 1.13)]
    own = paired_verdict(logs, 0.05)
    assert own.spread == "pairs"
    assert own.kind == "better"
    assert own.low is not None
    assert own.high is not None
    assert own.low < own.ratio < own.high
    assert own.sentence("tuned", "defaults").startswith("tuned beats defaults by 1.12x (")
    assert own.sentence("tuned", "defaults").endswith("), resolved at ±5%")
    pooled = paired_verdict(logs[:2], 0.05, pooled=PooledSpread(sd=0.01, df=40))
    assert pooled.spread == "pooled"
    assert pooled.kind == "better"


def test_one_pair_without_a_pooled_spread_is_unresolved_with_no_interval() -> None:
    v = paired_verdict([math.log(1.3)], 0.05)
    assert (v.kind, v.low, v.high) == ("unresolved", None, None)
    assert v.sentence("A", "B").startswith("unresolved: A against B 1.30x (no interval")


def test_more_looks_and_a_larger_family_widen_the_interval() -> None:
    logs = [0.10, 0.12, 0.08, 0.11]
    one = paired_verdict(logs, 0.05)
    many = paired_verdict(logs, 0.05, family=3, looks=4)
    assert one.low is not None
    assert many.low is not None
    assert many.low < one.low


def test_the_pooled_spread_is_within_configurations_only() -> None:
    found = pooled_spread([[10.0, 10.0 * math.e ** 0.1], [20.0, 20.0 * math.e ** 0.1], [5.0]])
    assert found is not None
    assert found.df == 2
    assert found.sd == pytest.approx(0.1 / math.sqrt(2))
    assert pooled_spread([[1.0], [2.0]]) is None


def test_the_pooled_cv_has_an_upper_bound_above_it() -> None:
    found = pooled_spread([[10.0, 10.3, 9.8, 10.1], [20.0, 20.5, 19.6]])
    assert found is not None
    assert (found.starts, found.configurations, found.df) == (7, 2, 5)
    assert 0 < found.cv() < found.cv_upper()
    assert found.text().startswith(f"{found.cv():.1%} (upper 95% bound {found.cv_upper():.1%}; "
                                   "7 starts of 2 configurations, 5 degrees of freedom)")


def test_capacities_on_the_same_step_are_not_a_spread_of_zero() -> None:
    """The quickstart on a fast machine: both starts of each configuration landed on the same
    step of the search's grid (170 and 170, 190 and 190, each known only to a ~10% step): a
    pooled SD of 0 called 1.12x (1.12-1.12) a resolved win. The step's own SD is the floor."""
    logs = [math.log(190 / 170)] * 2
    pooled = pooled_spread([[170.0, 170.0], [190.0, 190.0]])
    assert pooled is not None
    assert pooled.sd == 0
    unfloored = paired_verdict(logs, 0.05, pooled=pooled)
    assert unfloored.kind == "better"  # what it said before the floor
    floor = step_floor([(179 - 162) / 162, (179 - 162) / 162, (198 - 179) / 179, 0.1])
    assert 0.025 < floor < 0.03
    verdict = paired_verdict(logs, 0.05, pooled=floored(pooled, floor), floor_sd=floor)
    assert verdict.kind == "unresolved"
    assert verdict.low is not None
    assert verdict.low < 1.0 < 1.12 < (verdict.high or 0)
    assert step_floor([None, None]) == 0  # interpolated capacities have no step to floor at
    assert floored(pooled, floor).sd == floor  # type: ignore[union-attr]
