"""The face of tuner.measurement: what other packages use of it; the rest is private."""

from tuner.measurement.bench_report import make_report, write_report
from tuner.measurement.bench_session import Bench, open_bench
from tuner.measurement.capacity import CapacityEstimate, CapacityResult, estimate
from tuner.measurement.curve_search import Probe, SearchBudget, search_capacity
from tuner.measurement.greedy_probe import PROMPTS, greedy_answers
from tuner.measurement.step_line import verdict_text

__all__ = [
    "Bench", "CapacityEstimate", "CapacityResult", "PROMPTS", "Probe",
    "SearchBudget", "estimate", "greedy_answers", "make_report", "open_bench",
    "search_capacity", "verdict_text", "write_report",
]
