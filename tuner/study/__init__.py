"""The face of tuner.study: what other packages use of it; the rest is private."""

from tuner.study.config import StudyConfig
from tuner.study.enqueued import check_baseline, check_enqueued
from tuner.study.loop import results_summary, run_search
from tuner.study.measurer import HttpMeasurer, Measurer
from tuner.study.outcome import (
    Outcome,
    Timing,
    TrialResult,
    baseline_trial,
    cheapest,
    defaults_trial,
    ranked,
)
from tuner.study.policy import FAILED_COST
from tuner.study.record import RECORD_ATTR, StudyRecord, config_from, parse_record, record_of
from tuner.study.replay import ENCODINGS, GRID_ORDER, MeasuredTable, TableRow, replay
from tuner.study.run_folder import OutboxFiles, RunFolder
from tuner.study.samplers import DEFAULT_SAMPLER, SAMPLERS, STARTUP_TRIALS
from tuner.study.space import CategoricalKnob, SearchSpace, load_search_space
from tuner.study.state import StudyProgress
from tuner.study.status import StudyStatus, study_status
from tuner.study.tracker import NullTracker, Tracker
from tuner.study.trial import TrialContext

__all__ = [
    "CategoricalKnob", "DEFAULT_SAMPLER", "ENCODINGS", "FAILED_COST", "GRID_ORDER",
    "HttpMeasurer", "MeasuredTable", "Measurer", "NullTracker", "OutboxFiles", "Outcome",
    "RECORD_ATTR", "RunFolder", "SAMPLERS", "STARTUP_TRIALS", "SearchSpace", "StudyConfig",
    "StudyProgress", "StudyRecord", "StudyStatus", "TableRow", "Timing", "Tracker",
    "TrialContext", "TrialResult", "baseline_trial", "cheapest", "check_baseline",
    "check_enqueued", "config_from",
    "defaults_trial", "load_search_space", "parse_record", "ranked", "record_of", "replay",
    "results_summary", "run_search", "study_status",
]
