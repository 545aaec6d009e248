"""What a study ends with (``summary.json``): defaults vs best, the tuning delta, the time split."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tuner.metrics import Interval, PooledSpread, RatioVerdict
from tuner.study.outcome import TrialResult
from tuner.study.repeats import Remeasured, RemeasureOutcome, unresolved_step
from tuner.study.results.noise_record import NoiseRecord
from tuner.study.results.pareto import TradeOff


class NoiseFloor(BaseModel):
    """The smallest relative cost difference the study can resolve, and where it comes from."""

    value: float
    source: str


def noise_floor(defaults: TrialResult | None, remeasured: Remeasured | None,
                spread: PooledSpread | None = None, prior: NoiseRecord | None = None
                ) -> NoiseFloor | None:
    """From the defaults measured more than once: the spread of their starts in the search
    (intensification measures the first incumbent twice), and the half-width of their
    re-measured cost's 95% interval; and the capacity search's own resolution: when the
    defaults' capacity was not interpolated (its failing step was cut short, or the load is
    a concurrency), in the search or on a fresh start of the re-measurement, it is only
    known to lie between the last passing and failing loads, so
    configurations whose costs differ by less than that step can measure the same, or a
    step apart. The largest. When the re-measurement gives a start-to-start spread pooled over
    its candidates (``spread``), its CV's upper 95% bound is the floor instead; else, when
    ``tune measure`` recorded this host and engine's (``prior``), that one's upper bound
    counts among the others."""
    if spread is not None:  # the pooled start-to-start CV's upper bound
        return NoiseFloor(value=spread.cv_upper(), source=(
            f"the start-to-start CV pooled over the re-measurement, {spread.text()}"))
    found: list[NoiseFloor] = []
    if prior is not None:
        found.append(NoiseFloor(value=prior.spread.cv_upper(), source=(
            prior.source() + "; this study measured too few starts to pool its own")))
    step = defaults.capacity.estimate if defaults is not None and defaults.capacity else None
    if step is not None and (width := unresolved_step(step)) is not None:
        found.append(NoiseFloor(value=width, source=(
            f"the capacity search's step: the defaults passed load {step.low:.3g} and failed "
            f"{step.high:.3g}, nothing measured between")))
    if remeasured is not None and remeasured.unresolved_step is not None:
        found.append(NoiseFloor(value=remeasured.unresolved_step, source=(
            "the capacity search's step on a fresh start of the defaults: its capacity lies "
            "between a passing and a failing load, nothing measured between")))
    if defaults is not None and len(defaults.costs) > 1:
        mean = sum(defaults.costs) / len(defaults.costs)
        found.append(NoiseFloor(value=(max(defaults.costs) - min(defaults.costs)) / mean,
                                source=f"the defaults' {len(defaults.costs)} starts in the "
                                "search"))
    if remeasured is not None and remeasured.cost is not None and remeasured.cost.value > 0:
        c = remeasured.cost
        found.append(NoiseFloor(value=(c.high - c.low) / (2 * c.value),
                                source="half the re-measured defaults' 95% interval"))
    return max(found, key=lambda f: f.value, default=None)


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
    noise_floor: NoiseFloor | None = None
    verdict: str
    verdict_kind: str | None = Field(default=None, description="win, no_gain or unresolved: "
                                     "the side-by-side verdict against the defaults on fresh "
                                     "starts (None: no re-measurement to decide it)")
    comparison: RatioVerdict | None = Field(default=None, description="that verdict's ratio "
                                            "(the defaults' cost over the configuration's), "
                                            "interval and resolution")
    baseline_trial: TrialResult | None = Field(default=None, description="the trial of the "
                                               "user's current configuration (tune --baseline)")
    baseline_verdict: str | None = Field(default=None, description="the verdict against it, "
                                         "as verdict is against the defaults")
    best_config: dict[str, Any] | None
    best_command: str | None
    time: TimeSplit
    time_shares: dict[str, float]
    pareto: list[TradeOff] = Field(default_factory=list, description="the Pareto front of cost "
                                   "against p95 TTFT and p95 ITL over every feasible trial, "
                                   "cheapest first (tune report, tune export --pick)")
    spend_usd: float | None = Field(default=None, description="what the search's finished "
                                    "trials spent on accelerators (tuner.study.coordination.spend)")
