"""What a study spent (engine time x accelerators x price) and what finishing it takes."""

from __future__ import annotations

import pytest

from tests.unit.fakes.trials import trial
from tuner.study.coordination.spend import spend_line, spend_of, to_finish, trial_usd
from tuner.study.outcome import Timing
from tuner.workload import Cost

PRICE = Cost(usd_per_hour=3.0)


def test_a_trial_costs_its_engine_hours_times_its_accelerators_price() -> None:
    assert trial_usd(trial(1, 1.0, engine_s=1200, accelerators=2), PRICE) == pytest.approx(2.0)
    host = Cost(usd_per_hour=3.0, per_accelerator=False)
    assert trial_usd(trial(1, 1.0, engine_s=1200, accelerators=2), host) == pytest.approx(1.0)


def test_failed_trials_cost_their_engine_time_rejected_ones_nothing() -> None:
    spent = spend_of([trial(0, 1.0, engine_s=600), trial(1, None, engine_s=1200),
                      trial(2, None, rejected=True)], PRICE)
    assert spent.usd == pytest.approx(1.5)
    assert spent.starts == 2


def test_to_finish_counts_the_starts_left_and_stops_at_the_money_budget() -> None:
    spent = spend_of([trial(0, 1.0, engine_s=1200), trial(1, 1.0, engine_s=1200, starts=2)],
                     PRICE)
    assert spent.usd_per_start == pytest.approx(2 / 3)
    left = to_finish(spent, 6, parallel=2)
    assert left.starts == 6
    assert left.usd == pytest.approx(4.0)
    assert left.seconds == pytest.approx(6 * spent.wall_s / 3 / 2)
    # $2 spent of $3.50: two more starts can begin (the second ends past the budget)
    assert to_finish(spent, 6, budget_usd=3.5).starts == 3
    assert to_finish(spent, 6, budget_usd=2.0).starts == 0


def test_the_progress_line() -> None:
    spent = spend_of([trial(0, 1.0, engine_s=1200)], PRICE)
    line = spend_line(spent, to_finish(spent, 3, budget_usd=10), 10)
    assert line == "$1 of $10 spent; to finish: 3 engine starts, about 60 min, $3"
    empty = spend_of([], PRICE)
    assert spend_line(empty, to_finish(empty, 3), None) == "$0 spent (0 engine starts)"


def test_a_trial_measured_again_counts_both_starts_time() -> None:
    both = Timing(startup_s=1, measure_s=2, wall_s=4).plus(Timing(startup_s=3, teardown_s=1))
    assert both == Timing(startup_s=4, measure_s=2, teardown_s=1, wall_s=4)


def test_the_time_budget_caps_the_estimate_too() -> None:
    spent = spend_of([trial(0, 1.0, engine_s=599)], PRICE)  # 600 s a start, wall
    assert to_finish(spent, 10, seconds_left=900).starts == 2
    assert to_finish(spent, 10, seconds_left=900, parallel=2).starts == 3
