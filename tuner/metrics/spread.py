"""How much repeated measurements of one thing differ: mean, coefficient of variation and a
95% interval of the mean (Student's t). For a quantity that cannot be negative (every value
at least 0), an interval whose lower end falls below 0 says nothing below its upper end: it is
kept and printed as an upper bound only."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: t95).
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t95(df: int) -> float:
    """Student's t quantile for a two-sided 95% interval: the table, then Cornish-Fisher's
    expansion (within 1e-4 from 30 degrees of freedom on)."""
    if df <= len(T95):
        return T95[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


class Spread(BaseModel):
    n: int
    mean: float
    sd: float | None = None
    cv: float | None = None
    """Coefficient of variation: sample standard deviation / mean."""
    low: float | None = None
    """None with ``high`` set: the values bound the mean only from above (see the module)."""
    high: float | None = None

    def text(self, fmt: str = "{:.3g}") -> str:
        if self.cv is None or self.high is None:
            return f"{fmt.format(self.mean)} (n={self.n})"
        if self.low is None:
            return (f"{fmt.format(self.mean)} (95% CI: at most {fmt.format(self.high)}; "
                    f"{self.n} values bound it only from above, CV {self.cv:.1%}, n={self.n})")
        return (f"{fmt.format(self.mean)} (95% CI {fmt.format(self.low)}-"
                f"{fmt.format(self.high)}, CV {self.cv:.1%}, n={self.n})")


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of finite ``values`` (None: none)."""
    xs = [v for v in values if math.isfinite(v)]
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return Spread(n=n, mean=mean)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t95(n - 1) * sd / math.sqrt(n)
    low: float | None = mean - half
    if min(xs) >= 0 and mean - half < 0:
        low = None
    return Spread(n=n, mean=mean, sd=sd, cv=sd / mean if mean else None, low=low,
                  high=mean + half)
