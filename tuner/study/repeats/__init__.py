"""The face of tuner.study.repeats: what other packages use of it; the rest is private."""

from tuner.study.outcome import MeasuredRun
from tuner.study.repeats.fresh_start import fresh_start, measure_repeats
from tuner.study.repeats.paired import (
    PairedOutcome,
    Side,
    interleaved,
    measure_pairs,
    paired_outcome,
    results_floor,
)
from tuner.study.repeats.remeasure import (
    Candidate,
    Remeasured,
    RemeasureOutcome,
    measure_interleaved,
    pick_winner,
    run_of,
    summarise_candidate,
    unresolved_step,
    verdict_between,
)
from tuner.study.repeats.remeasure_loop import Remeasurement, remeasure_study
from tuner.study.repeats.remeasure_round import LOST, UNIT, RoundStatus, status_of_round

__all__ = [
    "Candidate", "LOST", "MeasuredRun", "PairedOutcome", "RemeasureOutcome", "Remeasured",
    "Remeasurement", "RoundStatus", "Side", "UNIT", "fresh_start", "interleaved",
    "measure_interleaved", "measure_pairs", "measure_repeats", "paired_outcome", "pick_winner",
    "remeasure_study", "results_floor", "run_of", "status_of_round", "summarise_candidate",
    "unresolved_step", "verdict_between",
]
