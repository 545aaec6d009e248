"""Capacity from every step of a search: the load at which each SLO figure, fitted monotone in
load, crosses its bound, with a 95% interval from a bootstrap over the requests within steps.

Every measured request of every step counts. For each bounded metric of the registry (p95
TTFT, p95 ITL, the error rate, p99 E2E when bounded), each step's figure is fitted against the
logarithm of the load by isotonic regression (non-decreasing: an engine does not get faster
as it is loaded more), weighted by the step's requests; steps at the same load are one step
with all their requests (two runs at one load that disagree both count). The crossing is
interpolated linearly in log load between the last fitted figure within the bound and the
first above it; the capacity is the lowest crossing over the metrics, and its metric is the
binding one.

A step stopped early by the SLO guard (or failed on keeping up with the offered load) is a
censored observation: above the bounds with confidence, by an unknown amount. The capacity is
below its load; where the curves alone would put it above, the crossing is anywhere between
the highest step below it and it (drawn uniformly in log load in each replicate).

The interval: each replicate draws every step's requests with replacement (a request brings
all its values: one TTFT, all its inter-token gaps), refits and recrosses. Its 2.5% and 97.5%
percentiles bound the capacity. When more than 2.5% of replicates cross nowhere (every step
within the bounds), the capacity is not bracketed above and is shown as a lower bound only
(``≥ 24``); when they cross below the lowest step, as an upper bound (``< 2``). The bootstrap
treats requests as independent: latencies that drift together within a step (a stall) make
the interval too narrow, which the start-to-start variance (repeats) accounts for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from tuner.loadgen import RequestRecord
from tuner.metric_registry import Metric

LEVEL = 0.95


@dataclass(frozen=True)
class StepSample:
    """One step's measured requests at its load."""

    load: float
    records: Sequence[RequestRecord]
    censored: bool = False
    """Stopped early by the guard, or failed on keeping up: above the bounds, by how much
    unknown."""


class CapacityInterval(BaseModel):
    """The capacity with its interval; a bound when the steps do not bracket it."""

    load: float | None
    """The point estimate (None: not bracketed on that side, see ``low``/``high``)."""
    low: float | None
    """The interval's low end (None: below the lowest step measured)."""
    high: float | None
    """The interval's high end (None: above the highest step measured)."""
    binding: str | None
    steps: int
    level: float = LEVEL
    interpolated: bool | None = None
    """The point was interpolated on the binding metric's fitted curve, strictly inside its
    bracket; False: it is the bracket's middle or end (the step is all that is known: a
    censored failing step, a flat curve). None: not recorded (searches before it was)."""

    @property
    def bracketed(self) -> bool:
        return self.low is not None and self.high is not None

    def half_width(self) -> float | None:
        """The interval's relative half-width, (high - low) / (2 x load)."""
        if not self.bracketed or not self.load:
            return None
        assert self.low is not None
        assert self.high is not None
        return (self.high - self.low) / (2 * self.load)

    def text(self, unit: str = "", fmt: str = "{:.3g}") -> str:
        """``11.2 req/s (10.8-11.6)``, ``≥ 24 req/s (not bracketed)``, or ``< 2 req/s (no
        load met the SLOs)``."""
        u = f" {unit}" if unit else ""
        if self.high is None and self.low is None:
            return "unknown (not bracketed on either side)"
        if self.high is None:
            return f"≥ {fmt.format(self.low or 0.0)}{u} (not bracketed)"
        if self.low is None:
            return f"< {fmt.format(self.high)}{u} (no load met the SLOs)"
        assert self.load is not None
        return (f"{fmt.format(self.load)}{u} ({fmt.format(self.low)}-"
                f"{fmt.format(self.high)})")


@dataclass(frozen=True)
class _Values:
    """One latency's values at one step, sorted, with the request each came from."""

    values: np.ndarray
    owner: np.ndarray


def _merged(steps: Sequence[StepSample]) -> list[StepSample]:
    """Steps at the same load as one (all their requests; censored if any was)."""
    by_load: dict[float, list[StepSample]] = {}
    for s in steps:
        by_load.setdefault(s.load, []).append(s)
    return [StepSample(load, [r for s in same for r in s.records],
                       any(s.censored for s in same))
            for load, same in sorted(by_load.items())]


def _statistic(metric: Metric) -> float | None:
    """The quantile a latency metric reads (``p95`` -> 0.95; ``mean`` -> None)."""
    _, _, stat = metric.read.partition(".")
    return float(stat[1:]) / 100 if stat.startswith("p") else None


def _figures(metric: Metric, step: StepSample, counts: np.ndarray) -> np.ndarray:
    """The metric's figure at ``step`` under each row of request ``counts`` (B x requests);
    NaN where a row has no value."""
    latency = metric.latency
    if latency is None:  # the error rate: errors / requests
        errors = np.array([r.error is not None for r in step.records], dtype=float)
        total = counts.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((counts @ errors) / total, dtype=float)
    vals, owner = [], []
    for i, r in enumerate(step.records):
        got = list(latency.values_ns(r))
        vals += got
        owner += [i] * len(got)
    if not vals:
        return np.full(counts.shape[0], np.nan)
    order = np.argsort(vals, kind="stable")
    v = _Values(np.asarray(vals, dtype=float)[order] / 1e6, np.asarray(owner)[order])
    weights = counts[:, v.owner]
    q = _statistic(metric)
    total = weights.sum(axis=1)
    if q is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((weights @ v.values) / total, dtype=float)
    cum = np.cumsum(weights, axis=1)
    idx = np.minimum((cum < q * total[:, None]).sum(axis=1), len(v.values) - 1)
    out = v.values[idx]
    return np.where(total > 0, out, np.nan)


def _first_failing(fitted: np.ndarray, bound: float) -> int:
    """The index of the first fitted figure past ``bound`` (len: none is)."""
    above = np.nonzero(fitted > bound)[0]
    return int(above[0]) if len(above) else len(fitted)


def _interpolated(x0: float, x1: float, y0: float, y1: float, bound: float
                  ) -> tuple[float, bool]:
    """Where the chord from (x0, y0) to (x1, y1) meets ``bound``, in log figure when both are
    positive (a latency grows faster than linearly near saturation), and whether that is
    strictly inside the bracket (False: its middle, for a flat chord, or an end)."""
    if y0 > 0 and y1 > 0:
        y0, y1, bound = math.log(y0), math.log(y1), math.log(bound)
    if y1 <= y0:
        return (x0 + x1) / 2, False
    frac = (bound - y0) / (y1 - y0)
    return x0 + min(max(frac, 0.0), 1.0) * (x1 - x0), 0.0 < frac < 1.0


def capacity_interval(steps: Sequence[StepSample], bounds: dict[Metric, float], *,
                      replicates: int = 400, seed: int = 0,
                      level: float = LEVEL) -> CapacityInterval:
    """The capacity the ``steps`` show under ``bounds`` (the workload's, by metric)."""
    merged = _merged([s for s in steps if s.records or s.censored])
    if not merged:
        return CapacityInterval(load=None, low=None, high=None, binding=None, steps=len(steps),
                                level=level)
    rng = np.random.default_rng(seed)
    n_rep = replicates + 1  # row 0: the requests as measured (the point estimate)
    grid = np.log([s.load for s in merged])
    measured = [i for i, s in enumerate(merged) if s.records and not s.censored]
    # The first failing step of the grid in each replicate: a censored step fails in all.
    censored = [i for i, s in enumerate(merged) if s.censored]
    first = np.full(n_rep, min(censored) if censored else len(merged))
    binding = np.full(n_rep, -2 if censored else -1)
    metrics = list(bounds)
    fits: dict[int, np.ndarray] = {}
    if measured:
        # scipy.optimize takes 0.6 s to import: here, not at every start of the tool.
        from scipy.optimize import isotonic_regression

        sizes = np.array([len(merged[i].records) for i in measured], dtype=float)
        counts = [np.vstack([np.ones(n, dtype=np.int32),
                             rng.multinomial(n, np.full(n, 1 / n), size=replicates)])
                  for n in (len(merged[i].records) for i in measured)]
        for k, metric in enumerate(metrics):
            assert metric.slo is not None
            bound = bounds[metric]
            table = np.column_stack([_figures(metric, merged[i], c)
                                     for i, c in zip(measured, counts, strict=True)])
            fill = 0.0 if metric.slo.absent_passes else 10 * bound + 1
            table = np.where(np.isnan(table), fill, table)
            for b in range(n_rep):
                fitted = isotonic_regression(table[b], weights=sizes).x
                j = _first_failing(fitted, bound)
                at = measured[j] if j < len(measured) else len(merged)
                if at < first[b]:
                    first[b], binding[b] = at, k
                if b == 0:
                    fits[k] = fitted
    # Replicate b brackets the capacity between steps first - 1 and first.
    tail = (1 - level) / 2
    lowest = int(np.sort(first[1:])[int(np.floor(tail * (n_rep - 2)))]) - 1
    highest = int(np.sort(first[1:])[int(np.ceil((1 - tail) * (n_rep - 2)))])
    low = merged[lowest].load if lowest >= 0 else None
    high = merged[highest].load if highest < len(merged) else None
    load, inside = None, False
    if low is not None and high is not None:
        point, inside = _point(merged, measured, fits, first[0], binding[0], metrics, bounds,
                               grid)
        load = float(np.clip(np.exp(point), low, high))
    name = ("stopped early" if binding[0] == -2 else
            metrics[binding[0]].key if binding[0] >= 0 else None)
    return CapacityInterval(load=load, low=low, high=high, binding=name, steps=len(steps),
                            level=level, interpolated=inside)


def _point(merged: list[StepSample], measured: list[int], fits: dict[int, np.ndarray],
           first: int, binding: int, metrics: list[Metric], bounds: dict[Metric, float],
           grid: np.ndarray) -> tuple[float, bool]:
    """The point estimate (log load) and whether it was interpolated: the binding metric's
    fitted curve interpolated between the last step within the bounds and the first past them;
    the middle of that bracket when the first past them is censored (its figure unknown); the
    bracket's end outside it."""
    if first == 0:
        return float(grid[0]), False
    if first >= len(merged):
        return float(grid[-1]), False
    x0, x1 = float(grid[first - 1]), float(grid[first])
    if binding < 0 or first not in measured or first - 1 not in measured:
        return (x0 + x1) / 2, False
    fitted = fits[binding]
    i1 = measured.index(first)
    return _interpolated(x0, x1, float(fitted[i1 - 1]), float(fitted[i1]),
                         bounds[metrics[binding]])
