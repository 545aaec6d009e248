"""Fitting lengths and arrivals to observed values, with the goodness of each fit.

Goodness is the Kolmogorov-Smirnov distance between the observed values and a large sample of
the fitted model itself (with its clipping and rounding to whole tokens), so every family is
judged as it will be replayed. A length family is kept when its distance is at most
``KS_LIMIT``; otherwise the observed lengths are replayed as they are (empirical).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from tuner.workload.arrivals import GammaArrivals, PoissonArrivals
from tuner.workload.lengths import LengthDist

KS_LIMIT = 0.08
"""Largest KS distance at which a parametric family is taken for the lengths."""
POISSON_CV = 0.15
"""Inter-arrival coefficients of variation within this of 1 are taken for Poisson."""
MODEL_SAMPLE = 20_000

_LENGTH = TypeAdapter(LengthDist)


def ks_distance(observed: np.ndarray, model: np.ndarray) -> float:
    """Two-sample KS distance: the largest gap between the two empirical CDFs."""
    a, b = np.sort(observed), np.sort(model)
    points = np.concatenate([a, b])
    gap = (np.searchsorted(a, points, side="right") / len(a)
           - np.searchsorted(b, points, side="right") / len(b))
    return float(np.max(np.abs(gap)))


@dataclass(frozen=True, slots=True)
class LengthFit:
    """The chosen description of some lengths (a LengthDist mapping), its KS distance, and
    every family tried with its distance."""

    spec: dict[str, Any]
    ks: float
    tried: dict[str, float] = field(default_factory=dict)

    @property
    def empirical(self) -> bool:
        return bool(self.spec["dist"] == "empirical")


TRIM_GAIN = 0.02
"""How much nearer (KS) a uniform bounded by percentiles must be to win over min and max."""


def _candidates(values: np.ndarray) -> dict[str, dict[str, Any]]:
    lo, hi = int(values.min()), int(values.max())
    mean = float(values.mean())
    logs = np.log(values)
    sigma = float(logs.std(ddof=1)) if len(values) > 1 else 0.0
    families: dict[str, dict[str, Any]] = {
        "uniform": {"dist": "uniform", "min": lo, "max": hi},
    }
    # a class split off by length holds a few of its neighbour's tail: bound a uniform by
    # its 5th and 95th percentiles too (extended by the 5% each side that a uniform puts
    # beyond them), and keep whichever bounds fit nearer
    q5, q95 = np.percentile(values, [5, 95])
    p1, p99 = (int(round(x)) for x in (q5 - (q95 - q5) / 18, q95 + (q95 - q5) / 18))
    p1, p99 = max(p1, lo), min(p99, hi)
    if p1 < p99 and (p1, p99) != (lo, hi):
        families["uniform-trimmed"] = {"dist": "uniform", "min": p1, "max": p99}
    std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    if std > 0:
        families["normal"] = {"dist": "normal", "mean": round(mean, 2), "std": round(std, 2),
                              "min": lo, "max": hi}
    if 0 < sigma <= 5:
        lognormal_mean = math.exp(float(logs.mean()) + sigma**2 / 2)
        families["lognormal"] = {"dist": "lognormal", "mean": round(min(hi, lognormal_mean), 2),
                                 "sigma": round(sigma, 4), "min": lo, "max": hi}
    return families


def fit_lengths(values: np.ndarray, rng_seed: int = 0) -> LengthFit:
    """The family (fixed, uniform, normal, lognormal) nearest ``values`` in KS distance, or
    ``{"dist": "empirical"}`` (the caller writes the values to a file) when none is within
    ``KS_LIMIT``."""
    values = np.asarray(values, dtype=np.int64)
    if values.min() == values.max():
        return LengthFit({"dist": "fixed", "value": int(values[0])}, 0.0, {"fixed": 0.0})
    tried = {}
    for name, spec in _candidates(values).items():
        model = _LENGTH.validate_python(spec)
        sample = model.sample(np.random.default_rng(rng_seed), MODEL_SAMPLE)
        tried[name] = ks_distance(values, sample)
    if tried.get("uniform-trimmed", 1.0) > tried["uniform"] - TRIM_GAIN:
        tried.pop("uniform-trimmed", None)  # the plain bounds, unless trimming clearly helps
    best = min(tried, key=lambda k: tried[k])
    if tried[best] <= KS_LIMIT:
        return LengthFit(_candidates(values)[best], tried[best], tried)
    return LengthFit({"dist": "empirical"}, 0.0, tried)


@dataclass(frozen=True, slots=True)
class ArrivalFit:
    """The arrival process fitted to send times."""

    spec: dict[str, Any]
    cv: float
    mean_rate: float
    peak_rate: float
    ks: float


def fit_arrivals(times_s: np.ndarray, *, rate: str = "mean", window_s: float = 60.0,
                 rng_seed: int = 0) -> ArrivalFit:
    """Poisson when the inter-arrival CV is within ``POISSON_CV`` of 1, else gamma with
    burstiness 1/CV^2 (vllm bench serve's convention), at the mean rate or the peak rate (the
    most arrivals in any ``window_s`` window, per second)."""
    times = np.sort(np.asarray(times_s, dtype=np.float64))
    gaps = np.diff(times)
    span = float(times[-1] - times[0])
    mean_rate = (len(times) - 1) / span if span > 0 else 1.0
    window = min(window_s, span) if span > 0 else 1.0
    ends = np.searchsorted(times, times + window, side="left")
    peak_rate = max(mean_rate, float(np.max(ends - np.arange(len(times)))) / window)
    cv = float(gaps.std(ddof=1) / gaps.mean()) if len(gaps) > 1 and gaps.mean() > 0 else 1.0
    chosen = round(peak_rate if rate == "peak" else mean_rate, 6)
    process: PoissonArrivals | GammaArrivals
    if abs(cv - 1) <= POISSON_CV or cv <= 0:
        process = PoissonArrivals(rate=chosen)
    else:
        process = GammaArrivals(rate=chosen, burstiness=round(min(1000.0, 1 / cv**2), 4))
    plain = process.model_copy(update={"rate": mean_rate, "exact_rate": False})
    model = np.diff(plain.offsets_ns(np.random.default_rng(rng_seed), MODEL_SAMPLE, None)) / 1e9
    ks = ks_distance(gaps, model) if len(gaps) else 0.0  # shapes compared at the log's rate
    return ArrivalFit(process.model_dump(mode="json", exclude_defaults=True)
                      | {"process": process.process}, cv, mean_rate, peak_rate, ks)


def split_classes(inputs: np.ndarray, *, max_classes: int = 3,
                  separation: float = 0.8, least_share: float = 0.05) -> list[np.ndarray]:
    """Indices of ``inputs`` grouped into length classes: the best two-way split of
    ln(length) (1-D two-means) is kept while it explains at least ``separation`` of the
    group's variance (halving one normal explains 64%, one uniform 75%: a split above 80%
    finds distinct modes) and each side holds at least ``least_share`` of all requests;
    classes ordered short to long."""
    logs = np.log(np.asarray(inputs, dtype=np.float64))
    groups = [np.argsort(logs)]
    total = len(logs)
    changed = True
    while changed and len(groups) < max_classes:
        changed = False
        for k, group in enumerate(groups):
            halves = _best_split(logs[group], separation, max(2, int(least_share * total)))
            if halves is not None:
                groups[k:k + 1] = [group[:halves], group[halves:]]
                changed = True
                break
    return groups


def _best_split(sorted_logs: np.ndarray, separation: float, least: int) -> int | None:
    n = len(sorted_logs)
    if n < 2 * least:
        return None
    cut = np.arange(least, n - least + 1)
    sums, squares = np.cumsum(sorted_logs), np.cumsum(sorted_logs**2)
    left_sse = squares[cut - 1] - sums[cut - 1] ** 2 / cut
    right_n = n - cut
    right_sum, right_sq = sums[-1] - sums[cut - 1], squares[-1] - squares[cut - 1]
    right_sse = right_sq - right_sum**2 / right_n
    split = left_sse + right_sse
    best = int(np.argmin(split))
    whole = float(squares[-1] - sums[-1] ** 2 / n)
    explained = 1 - float(split[best]) / whole if whole > 0 else 0.0
    return int(cut[best]) if explained >= separation else None
