"""The study's verdict against the defaults: each re-measured candidate paired with the
defaults repeat by repeat, decided at the resolution (win, nothing to gain, unresolved)."""

from __future__ import annotations

from tests.unit.fakes.trials import trial
from tuner.metrics import RatioVerdict
from tuner.study.outcome import TrialResult
from tuner.study.repeats.remeasure import (
    MeasuredRun,
    StudyVerdict,
    study_verdict_of,
    verdicts_against_defaults,
)

DEFAULTS, FAST, SAME = trial(0, 2.0, defaults=True), trial(1, 1.5), trial(2, 2.0)


def runs(number: int, loads: list[float], *, defaults: bool = False,
         bound: bool = False) -> list[MeasuredRun]:
    return [MeasuredRun(engine="vllm", trial=number, defaults=defaults, repeat=i, load=load,
                        usd_per_hour=1.0, bound=bound) for i, load in enumerate(loads)]


BASE = runs(0, [10.0, 10.4, 9.8, 10.1], defaults=True)


def verdict_of(found: list[MeasuredRun], picked: list[TrialResult]
               ) -> tuple[RatioVerdict | None, int | None, StudyVerdict | None]:
    return study_verdict_of(verdicts_against_defaults(found, picked, 0.05))


def test_a_clear_gain_is_a_resolved_win() -> None:
    found = BASE + runs(1, [13.0, 13.4, 12.9, 13.2]) + runs(2, [10.1, 10.2, 9.9, 10.0])
    verdict, number, kind = verdict_of(found, [DEFAULTS, FAST, SAME])
    assert (number, kind) == (1, "win")
    assert verdict is not None
    assert verdict.low is not None
    assert verdict.low > 1.05
    assert round(verdict.ratio, 1) == 1.3


def test_the_same_configuration_is_never_a_win() -> None:
    found = BASE + runs(2, [10.1, 10.2, 9.9, 10.0])
    verdict, number, kind = verdict_of(found, [DEFAULTS, SAME])
    assert verdict is not None
    assert kind == "no_gain"
    assert number == 2
    assert verdict.high is not None
    assert verdict.high < 1.05


def test_too_few_or_too_noisy_pairs_are_unresolved() -> None:
    found = runs(0, [10.0, 12.0], defaults=True) + runs(1, [12.5, 11.0])
    verdict, number, kind = verdict_of(found, [DEFAULTS, FAST])
    assert kind == "unresolved"
    assert verdict is not None
    assert number == 1


def test_a_start_with_only_a_bound_on_its_capacity_is_not_paired() -> None:
    found = BASE + runs(1, [13.0, 13.4, 12.9, 13.2], bound=True)
    assert verdict_of(found, [DEFAULTS, FAST]) == (None, None, None)
