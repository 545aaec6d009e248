"""The face of tuner.study.results: what other packages use of it; the rest is private."""

from tuner.study.results.noise_record import NoiseRecord, load_noise_record, save_noise_record
from tuner.study.results.pareto import TradeOff, pareto_front, study_front, tradeoff_points
from tuner.study.results.pick import Pick, choose, parse_pick
from tuner.study.results.stored_study import StoredStudy, read_stored_study
from tuner.study.results.study_folder import StudyFolder, read_study_folder, write_host
from tuner.study.results.summary import NoiseFloor, StudySummary, TimeSplit, noise_floor

__all__ = [
    "NoiseFloor", "NoiseRecord", "Pick", "StoredStudy", "StudyFolder", "StudySummary", "TimeSplit",
    "TradeOff", "choose", "load_noise_record", "noise_floor", "pareto_front", "parse_pick",
    "read_stored_study", "read_study_folder", "save_noise_record", "study_front",
    "tradeoff_points", "write_host",
]
