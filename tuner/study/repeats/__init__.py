"""The face of tuner.study.repeats: what other packages use of it; the rest is private."""

from tuner.study.repeats.fresh_start import fresh_start, measure_repeats
from tuner.study.repeats.remeasure import (
    Candidate,
    MeasuredRun,
    Remeasured,
    RemeasureOutcome,
    measure_interleaved,
    pick_winner,
    run_of,
    summarise_candidate,
    unresolved_step,
)
from tuner.study.repeats.remeasure_loop import Remeasurement, remeasure_study
from tuner.study.repeats.remeasure_round import LOST, UNIT, RoundStatus, status_of_round

__all__ = [
    "Candidate", "LOST", "MeasuredRun", "RemeasureOutcome", "Remeasured", "Remeasurement",
    "RoundStatus", "UNIT", "fresh_start", "measure_interleaved", "measure_repeats",
    "pick_winner", "remeasure_study", "run_of", "status_of_round", "summarise_candidate",
    "unresolved_step",
]
