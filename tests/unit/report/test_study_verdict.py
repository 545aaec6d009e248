"""A re-measurement that could not measure says so; it is not a loss for the configuration."""

from __future__ import annotations

import pytest

from tuner.metrics import Interval
from tuner.report.study_report import study_verdict
from tuner.study import Timing, TrialResult
from tuner.study.repeats import Remeasured, RemeasureOutcome


def remeasured(trial: int, defaults: bool, cost: float | None, failures: list[str]
               ) -> Remeasured:
    return Remeasured(engine="vllm", trial=trial, defaults=defaults, config={}, load=2.0,
                      runs=1, slo_passed_runs=int(cost is not None), failures=failures,
                      cost=None if cost is None else Interval(value=cost, low=cost, high=cost),
                      ttft_p95_ms=[], itl_p95_ms=[], output_tokens_per_s=[], command=None)


def trial(number: int, defaults: bool, cost: float) -> TrialResult:
    return TrialResult(number=number, config={}, defaults=defaults, outcome="ok",
                       cost_per_m_output_tokens=cost, max_load=2.0)


def test_an_unmeasured_best_is_not_called_a_loss() -> None:
    d = remeasured(0, True, 0.85, [])
    best = remeasured(4, False, None, ["crashed_during_load: engine exited with code 1"])
    outcome = RemeasureOutcome(candidates=[d, best], winner=d, defaults=d,
                               tuning_delta=Interval(value=1, low=1, high=1), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, trial(0, True, 0.853), trial(4, False, 0.516))
    assert "could not be re-measured" in text
    assert "trial 4" in text
    assert "crashed_during_load" in text
    assert "nothing better" not in text


def test_defaults_that_stay_cheapest_on_fresh_starts_are_said_so() -> None:
    d, other = remeasured(0, True, 0.85, []), remeasured(4, False, 0.9, [])
    outcome = RemeasureOutcome(candidates=[d, other], winner=d, defaults=d,
                               tuning_delta=Interval(value=1, low=1, high=1), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, trial(0, True, 0.853), trial(4, False, 0.516))
    assert "stayed the cheapest" in text


def test_a_winner_that_met_the_slos_at_no_load_on_a_fresh_start_says_so() -> None:
    d = remeasured(0, True, 0.85, []).model_copy(update={"runs": 2, "slo_passed_runs": 1})
    outcome = RemeasureOutcome(candidates=[d], winner=d, defaults=d,
                               tuning_delta=Interval(value=1, low=1, high=1), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, trial(0, True, 0.853), trial(0, True, 0.853))
    assert "but it met the SLOs at no load on 1 of 2 fresh starts" in text


def test_defaults_that_met_the_slos_at_no_load_make_the_saving_a_lower_bound() -> None:
    d = remeasured(0, True, 0.0122, []).model_copy(update={"runs": 2, "slo_passed_runs": 1})
    best = remeasured(3, False, 0.0115, [])
    outcome = RemeasureOutcome(candidates=[d, best], winner=best, defaults=d,
                               tuning_delta=Interval(value=1.07, low=1.03, high=1.11), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, trial(0, True, 0.0115), trial(3, False, 0.0115))
    assert text.startswith("tuning vLLM saved 1.07x (1.03-1.11)")
    assert "the defaults met the SLOs at no load on 1 of 2 fresh starts" in text


def test_a_gain_below_the_noise_floor_is_not_called_resolved() -> None:
    from tuner.study.results import noise_floor

    defaults = trial(0, True, 1.0).model_copy(update={"costs": [0.95, 1.05]})
    d = remeasured(0, True, 1.0, []).model_copy(
        update={"cost": Interval(value=1.0, low=0.97, high=1.03)})
    floor = noise_floor(defaults, d)
    assert floor is not None
    assert floor.value == pytest.approx(0.1)  # the starts' spread, larger than the interval's 3%
    assert "2 starts" in floor.source
    best = remeasured(3, False, 0.95, [])
    outcome = RemeasureOutcome(candidates=[d, best], winner=best, defaults=d,
                               tuning_delta=Interval(value=1.05, low=1.02, high=1.08), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, defaults, trial(3, False, 0.95), floor)
    assert "less than the noise floor of 10.0%" in text
    assert noise_floor(trial(0, True, 1.0), None) is None


def test_a_capacity_known_only_between_two_steps_sets_the_noise_floor() -> None:
    from tuner.measurement import CapacityEstimate, CapacityResult
    from tuner.study.results import noise_floor

    def searched(interpolated: bool) -> TrialResult:
        estimate = CapacityEstimate(load=112, low=112, high=128, binding="throughput",
                                    interpolated=interpolated, output_tokens_per_s=4748,
                                    cost_per_m_output_tokens=0.00585)
        return trial(0, True, 0.00585).model_copy(update={"capacity": CapacityResult(
            steps=[], best=None, lowest_failing_load=128, stopped_by="max_steps",
            estimate=estimate)})

    d = remeasured(0, True, 0.00586, []).model_copy(
        update={"cost": Interval(value=0.00586, low=0.00578, high=0.00594)})
    floor = noise_floor(searched(False), d)  # both starts at 112: an interval of +-1.4%
    assert floor is not None
    assert floor.value == pytest.approx(16 / 112)
    assert "passed load 112 and failed 128" in floor.source
    floor = noise_floor(searched(True), d)  # interpolated: finer than the step
    assert floor is not None
    assert floor.value == pytest.approx(0.16 / (2 * 5.86))


def test_a_fresh_start_of_the_defaults_known_only_between_two_steps_sets_the_noise_floor(
        ) -> None:
    from tuner.measurement import CapacityEstimate, CapacityResult
    from tuner.study.repeats import run_of, summarise_candidate
    from tuner.study.results import noise_floor

    def start(high: float, interpolated: bool) -> TrialResult:
        estimate = CapacityEstimate(load=112, low=112, high=high, binding="ttft_p95_ms",
                                    interpolated=interpolated, output_tokens_per_s=4748,
                                    cost_per_m_output_tokens=0.00585)
        return trial(0, True, 0.00585).model_copy(update={"capacity": CapacityResult(
            steps=[], best=None, lowest_failing_load=high, stopped_by="converged",
            estimate=estimate)})

    runs = [run_of("vllm", start(120, False), 0, 0.1), run_of("vllm", start(116, True), 1, 0.1)]
    assert [r.unresolved_step for r in runs] == [pytest.approx(8 / 112), None]
    d, _ = summarise_candidate("vllm", trial(0, True, 0.00585), runs, seed=0,
                               tokens_of=lambda r: pytest.fail("no records to read"))
    assert d.unresolved_step == pytest.approx(8 / 112)
    floor = noise_floor(trial(0, True, 0.00585), d)  # the search's own start interpolated
    assert floor is not None
    assert floor.value == pytest.approx(8 / 112)
    assert "on a fresh start of the defaults" in floor.source


def test_a_cheaper_candidate_whose_slos_did_not_hold_does_not_win() -> None:
    from tuner.study.repeats import pick_winner

    held = remeasured(0, True, 0.0126, []).model_copy(update={"runs": 2, "slo_passed_runs": 2})
    lost = remeasured(11, False, 0.0121, []).model_copy(update={"runs": 2, "slo_passed_runs": 1})
    assert pick_winner([held, lost]) is held
    assert pick_winner([lost]) is lost  # none held: the cheapest, and the verdict says so
    assert pick_winner([]) is None


def test_defaults_that_win_because_the_cheaper_one_did_not_hold_say_so() -> None:
    d = remeasured(0, True, 0.0126, []).model_copy(update={"runs": 2, "slo_passed_runs": 2})
    lost = remeasured(11, False, 0.0121, []).model_copy(
        update={"runs": 2, "slo_passed_runs": 1})
    outcome = RemeasureOutcome(candidates=[d, lost], winner=d, defaults=d,
                               tuning_delta=Interval(value=1, low=1, high=1), runs=[],
                               timing=Timing())
    text = study_verdict("vLLM", outcome, trial(0, True, 0.0126), trial(11, False, 0.0121))
    assert "stayed the cheapest" in text
    assert "trial 11 cost less, but it met the SLOs at no load on 1 of 2 fresh starts" in text
