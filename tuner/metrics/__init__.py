"""The face of tuner.metrics: what other packages use of it; the rest is private."""

from tuner.metrics.bootstrap import (
    Interval,
    RunTokens,
    cost_samples,
    interval,
    point_cost,
    ratio_interval,
)
from tuner.metrics.capacity_curve import CapacityInterval, StepSample, capacity_interval
from tuner.metrics.cost import cost_per_million, money
from tuner.metrics.figures import Dist, dist_ms, latency_dist, measured, window_ns
from tuner.metrics.paired_ratio import (
    PooledSpread,
    RatioVerdict,
    floored,
    paired_verdict,
    pooled_spread,
    step_floor,
)
from tuner.metrics.quantiles import rate_lower_bound
from tuner.metrics.run_summary import (
    KEEP_UP_CHECKS,
    RunSummary,
    SloCheck,
    SloVerdict,
    summarise,
)
from tuner.metrics.spread import Spread, spread
from tuner.metrics.token_agreement import Agreement, GreedyAnswer, QualityVerdict, agreement

__all__ = [
    "Agreement", "CapacityInterval", "Dist", "GreedyAnswer", "Interval", "KEEP_UP_CHECKS",
    "PooledSpread", "QualityVerdict", "RatioVerdict", "RunSummary", "RunTokens", "SloCheck",
    "SloVerdict", "Spread", "StepSample", "agreement", "capacity_interval", "cost_per_million",
    "cost_samples", "dist_ms", "floored", "interval", "latency_dist", "measured", "money",
    "paired_verdict", "point_cost", "pooled_spread", "rate_lower_bound", "ratio_interval",
    "spread", "step_floor", "summarise", "window_ns",
]
