"""Distribution-free statistics of small samples: how sure a percentile or a rate is.

- A quantile's interval comes from order statistics: the number of values below the true
  q-quantile of n values is Binomial(n, q), so the values at the binomial's alpha/2 and
  1 - alpha/2 ranks bracket it with probability >= level. With fewer values than that needs,
  the interval has no upper end: the sample cannot bound the percentile.
- A rate's lower bound is Clopper-Pearson's: the smallest p for which k or more of n events
  are still plausible (P(X >= k) >= alpha).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

LARGE = 300


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return binom_cdfs(k, n, p)[k]


def binom_cdfs(k: int, n: int, p: float) -> list[float]:
    """``binom_cdf(j, n, p)`` for j = 0..k (k < n, 0 < p < 1), in one pass: each is the same
    sum, in the same order, as it would be alone, so the figures are the same to the bit."""
    log_p, log_q = math.log(p), math.log1p(-p)
    cdfs = []
    total = 0.0
    for i in range(k + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                          + i * log_p + (n - i) * log_q)
        cdfs.append(min(1.0, total))
    return cdfs


def min_samples_for_upper_bound(q: float = 0.95, level: float = 0.95) -> int:
    """The fewest values whose maximum is a ``level`` upper bound of the q-quantile:
    the smallest n with q**n <= 1 - level (59 for the p95 at 95%)."""
    return math.ceil(math.log(1 - level) / math.log(q))


def large_sample_ranks(n: int, q: float = 0.95, level: float = 0.95) -> tuple[int, int]:
    """The 1-based ranks of a q-quantile's ``level`` interval's ends among n > ``LARGE``
    values (the binomial's normal approximation); a rank outside 1..n leaves that end open."""
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    spread = z * math.sqrt(n * q * (1 - q))
    return math.floor(n * q - spread), math.ceil(n * q + spread) + 1


def quantile_interval(values: Sequence[float] | npt.NDArray[np.float64], q: float = 0.95,
                      level: float = 0.95, *, in_place: bool = False
                      ) -> tuple[float | None, float | None]:
    """A distribution-free ``level`` interval of the q-quantile of ``values`` (either end
    None where the sample is too small to bound it on that side). ``in_place``: a float64
    array of ``values`` may be reordered rather than copied."""
    n = len(values)
    if n == 0:
        return None, None
    alpha = (1 - level) / 2
    if n > LARGE:  # the binomial is normal enough here, and exact ranks cost O(n^2)
        lo_r, hi_r = large_sample_ranks(n, q, level)
        ranks = [r - 1 for r in (lo_r, hi_r) if 1 <= r <= n]
        if not ranks:
            return None, None
        # two order statistics of millions of values: a partition, not a sort
        if in_place and isinstance(values, np.ndarray) and values.dtype == np.float64:
            values.partition(ranks)
            picked = values
        else:
            picked = np.partition(np.asarray(values, dtype=np.float64), ranks)
        return (float(picked[lo_r - 1]) if lo_r >= 1 else None,
                float(picked[hi_r - 1]) if hi_r <= n else None)
    ordered = sorted(float(v) for v in values)
    # cdf[r - 1] is binom_cdf(r - 1, n, q), all n of them at the cost of the last one
    cdf = binom_cdfs(n - 1, n, q) if 0.0 < q < 1.0 else [binom_cdf(j, n, q) for j in range(n)]
    low_rank = None  # largest r (1-based) with P(X_(r) > quantile) <= alpha, i.e. cdf(r-1) <= alpha
    for r in range(n, 0, -1):
        if cdf[r - 1] <= alpha:
            low_rank = r
            break
    high_rank = None  # smallest r with P(X_(r) < quantile) <= alpha, i.e. cdf(r-1) >= 1-alpha
    for r in range(1, n + 1):
        if cdf[r - 1] >= 1 - alpha:
            high_rank = r
            break
    return (ordered[low_rank - 1] if low_rank else None,
            ordered[high_rank - 1] if high_rank else None)


def rate_lower_bound(k: int, n: int, level: float = 0.99) -> float:
    """Clopper-Pearson one-sided lower bound of a rate after ``k`` events in ``n`` trials."""
    if k <= 0 or n <= 0:
        return 0.0
    alpha = 1 - level
    lo, hi = 0.0, k / n
    for _ in range(60):  # P(X >= k | p) grows with p: bisect for P(X >= k | p) = alpha
        mid = (lo + hi) / 2
        if 1.0 - binom_cdf(k - 1, n, mid) < alpha:
            lo = mid
        else:
            hi = mid
    return lo
