"""Bootstrap confidence intervals for costs and their ratios.

A cost per million output tokens measured over one or more runs is resampled
hierarchically: runs (engine restarts) with replacement, then requests within
each chosen run with replacement; throughput = resampled output tokens (each
run's scaled to its estimated capacity) / the chosen runs' wall time. Ratios
(tuning and engine deltas) pair independent resamples of their two sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from tuner.metrics.cost import cost_per_million


class Interval(BaseModel):
    """A point estimate with a (1 - alpha) bootstrap percentile interval."""

    value: float
    low: float
    high: float
    level: float = 0.95

    def text(self, fmt: str = "{:.3g}") -> str:
        return f"{fmt.format(self.value)} ({fmt.format(self.low)}-{fmt.format(self.high)})"


@dataclass(frozen=True)
class RunTokens:
    """What the bootstrap needs from one run: each request's output tokens, the wall time,
    and the factor that turns its throughput into the throughput at the run's estimated
    capacity (the capacity lies between the step's load and the next, failing one)."""

    tokens: np.ndarray
    window_s: float
    scale: float = 1.0


def cost_samples(runs: Sequence[RunTokens], usd_per_hour: float, n: int = 2000,
                 seed: int = 0) -> np.ndarray:
    """Bootstrap distribution of USD per million output tokens."""
    rng = np.random.default_rng(seed)
    usable = [r for r in runs if r.window_s > 0 and len(r.tokens)]
    if not usable:
        return np.full(n, np.nan)
    out = np.empty(n)
    # Requests drawn as indices (rng.choice(tokens, size, replace=True) draws the same ones
    # from the same stream, with more overhead per call: 2000 x runs calls here).
    draw, k = rng.integers, len(usable)
    for i in range(n):
        tokens = 0.0
        window = 0.0
        for j in draw(0, k, size=k).tolist():
            run = usable[j]
            m = len(run.tokens)
            tokens += run.scale * float(run.tokens[draw(0, m, size=m)].sum())
            window += run.window_s
        out[i] = cost_per_million(usd_per_hour, tokens / window) or np.nan
    return out


def point_cost(runs: Sequence[RunTokens], usd_per_hour: float) -> float:
    tokens = sum(r.scale * float(r.tokens.sum()) for r in runs)
    window = sum(r.window_s for r in runs)
    cost = cost_per_million(usd_per_hour, tokens / window) if window > 0 else None
    return float("nan") if cost is None else cost


def interval(point: float, samples: np.ndarray, level: float = 0.95) -> Interval:
    finite = samples[np.isfinite(samples)]
    if len(finite) == 0:
        return Interval(value=point, low=float("nan"), high=float("nan"), level=level)
    lo, hi = np.percentile(finite, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return Interval(value=point, low=float(lo), high=float(hi), level=level)


def ratio_interval(num_point: float, num: np.ndarray, den_point: float, den: np.ndarray,
                   level: float = 0.95) -> Interval:
    """Interval of num/den from paired-by-index independent bootstrap samples."""
    return interval(num_point / den_point, num / den, level)
