"""The Pareto front of cost against p95 TTFT and p95 ITL, and picking a point of it."""

from __future__ import annotations

import pytest

from tests.unit.fakes.trials import trial
from tuner.core import ConfigError
from tuner.study.results.pareto import study_front
from tuner.study.results.pick import choose, parse_pick

TRIALS = [
    trial(0, 2.0, ttft=300, itl=30, defaults=True),
    trial(1, 1.0, ttft=900, itl=40),     # cheapest, slow
    trial(2, 1.5, ttft=400, itl=25),     # between: on the front
    trial(3, 1.6, ttft=450, itl=26),     # dominated by 2 on every objective
    trial(4, 3.0, ttft=120, itl=35),     # fastest TTFT, dear
    trial(5, 2.5, ttft=500, itl=10),     # best ITL only: on the front through ITL
    trial(6, None),                      # met no SLO: not a point
    trial(7, 1.0, ttft=900, itl=40),     # equal to 1: the first trial is kept
]


def test_front_keeps_exactly_the_undominated_trials_cheapest_first() -> None:
    front = study_front(TRIALS)
    assert [p.trial for p in front] == [1, 2, 0, 5, 4]
    assert front[0].cost_per_m_output_tokens == 1.0
    assert front[2].defaults


def test_a_missing_itl_counts_as_the_worst() -> None:
    front = study_front([trial(0, 1.0, ttft=100, itl=None), trial(1, 1.0, ttft=100, itl=5)])
    assert [p.trial for p in front] == [1]


@pytest.mark.parametrize(("pick", "expected"), [
    ("cheapest", 1), ("fastest", 4), ("ttft_p95_ms<=450", 2), ("ttft_p95_ms<=350", 0),
    ("TTFT_P95_MS <= 120", 4), ("itl_p95_ms<=20", 5), ("ttft_p95_ms<=400,itl_p95_ms<=28", 2),
])
def test_picks(pick: str, expected: int) -> None:
    assert choose(study_front(TRIALS), parse_pick(pick)).trial == expected


def test_the_cheapest_under_a_bound_is_the_cheapest_of_all_trials_under_it() -> None:
    """Why picking only looks at the front: no trial off it is cheaper under any bound."""
    front = study_front(TRIALS)
    for bound in (130, 310, 420, 460, 520, 1000):
        under = [t for t in TRIALS if t.feasible and t.best and t.best.ttft_ms.p95 is not None
                 and t.best.ttft_ms.p95 <= bound]
        best = min(t.cost_per_m_output_tokens or 0 for t in under)
        picked = choose(front, parse_pick(f"ttft_p95_ms<={bound}"))
        assert picked.cost_per_m_output_tokens == best


@pytest.mark.parametrize(("pick", "needle"), [
    ("quickest", "give cheapest, fastest, or bounds"),
    ("tpot_p95_ms<=100", "tpot_p95_ms cannot be bounded"),
    ("ttft_p95_ms<100", "give cheapest, fastest, or bounds"),
])
def test_bad_picks_are_one_line_naming_the_fix(pick: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_pick(pick)


def test_a_bound_no_trial_meets_names_the_fastest() -> None:
    with pytest.raises(ConfigError, match=r"no trial is that fast; the fastest, trial 4, has "
                       r"p95 TTFT 120.0 ms"):
        choose(study_front(TRIALS), parse_pick("ttft_p95_ms<=50"))


def test_nothing_to_pick_without_a_feasible_trial() -> None:
    with pytest.raises(ConfigError, match="no trial of this study met the SLOs"):
        choose(study_front([trial(0, None)]), parse_pick("cheapest"))
