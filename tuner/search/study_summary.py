"""What a study ends with (``summary.json``): defaults vs best, the tuning delta, the time split."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tuner.metrics.bootstrap import Interval
from tuner.search.outcome import TrialResult
from tuner.search.remeasure import RemeasureOutcome


class TimeSplit(BaseModel):
    wall_s: float
    startup_s: float
    measure_s: float
    teardown_s: float
    tuner_s: float

    def shares(self) -> dict[str, float]:
        w = self.wall_s or 1.0
        return {"startup": self.startup_s / w, "measurement": self.measure_s / w,
                "teardown": self.teardown_s / w, "tuner": self.tuner_s / w}


class StudySummary(BaseModel):
    study: str
    engine: str
    engine_version: str
    model: str
    workload: str
    workload_sha256: str | None
    hardware: str
    tuner_version: str
    trials: dict[str, int]
    defaults_trial: TrialResult | None
    best_trial: TrialResult | None
    remeasure: RemeasureOutcome | None
    tuning_delta: Interval | None
    verdict: str
    best_config: dict[str, Any] | None
    best_command: str | None
    time: TimeSplit
    time_shares: dict[str, float]
