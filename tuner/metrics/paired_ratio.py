"""The verdict of a side-by-side comparison: a ratio measured in pairs of fresh starts, with
its interval, decided at a resolution or not.

Configurations A and B are started alternately (A B B A A B ...), and each of A's starts is
paired with the adjacent start of B, so drift over time cancels within a pair. A pair gives
one log ratio (A's advantage: log of B's cost over A's, or of A's capacity over B's). The
interval is the mean log ratio +- t x its standard error, where the standard deviation is
the pairs' own (n - 1 degrees of freedom), or, when one is given, the pooled start-to-start
standard deviation of the host (a log ratio of two starts has twice its variance), whose
degrees of freedom are many more, so that few pairs still give an honest, narrower interval.

Decided at resolution r (two one-sided tests): the interval wholly above 1 + r (A better),
wholly below 1 - r (A worse), or wholly inside (1 - r, 1 + r) (equivalent: neither is better
by more than r). Anything else is unresolved. The level is shared out Bonferroni-wise over
the comparisons of a family (the leaders of a race) and over the looks a sequential design
may take (``looks``: decided after each pair), so that the chance of any false win stays at
most 1 - level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

Kind = Literal["better", "worse", "equivalent", "unresolved"]


class PooledSpread(BaseModel):
    """The start-to-start standard deviation of log capacity on a host and engine, pooled
    over configurations (one-way random effects), with its degrees of freedom."""

    sd: float
    df: int
    starts: int = 0
    configurations: int = 0

    def cv(self) -> float:
        """The coefficient of variation of a start's capacity (exp(sd) - 1 on the log)."""
        return math.expm1(self.sd)

    def cv_upper(self, level: float = 0.95) -> float:
        """The CV's one-sided upper confidence bound (chi-square on the pooled variance)."""
        from scipy.stats import chi2  # scipy.stats takes 0.9 s to import: not at every start

        return math.expm1(self.sd * math.sqrt(self.df / float(chi2.ppf(1 - level, self.df))))

    def text(self) -> str:
        return (f"{self.cv():.1%} (upper 95% bound {self.cv_upper():.1%}; {self.starts} starts "
                f"of {self.configurations} configuration{'s' if self.configurations != 1 else ''},"
                f" {self.df} degrees of freedom)")


def pooled_spread(groups: Sequence[Sequence[float]]) -> PooledSpread | None:
    """Pooled within-configuration SD of the log of ``groups``' values (each group: one
    configuration's starts; groups of fewer than 2 add nothing). None: no group had 2."""
    ss, df, starts, configs = 0.0, 0, 0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 2:
            continue
        mean = sum(logs) / len(logs)
        ss += sum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
        starts += len(logs)
        configs += 1
    if not df:
        return None
    return PooledSpread(sd=math.sqrt(ss / df), df=df, starts=starts, configurations=configs)


class RatioVerdict(BaseModel):
    kind: Kind
    ratio: float
    """A's advantage over B (> 1: A better), the geometric mean over pairs."""
    low: float | None
    high: float | None
    resolution: float
    pairs: int
    level: float
    spread: Literal["pairs", "pooled"]

    def interval_text(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.ratio:.2f}x (no interval from {self.pairs} pair)"
        return f"{self.ratio:.2f}x ({self.low:.2f}-{self.high:.2f})"

    def sentence(self, a: str, b: str) -> str:
        """The one line a user reads: ``tuned beats defaults by 1.12x (1.08-1.16), resolved
        at ±5%``."""
        r = f"{self.resolution:.0%}"
        if self.kind == "better":
            return f"{a} beats {b} by {self.interval_text()}, resolved at ±{r}"
        if self.kind == "worse":
            return f"{a} is worse than {b}: {self.interval_text()}, resolved at ±{r}"
        if self.kind == "equivalent":
            return (f"{a} and {b} are within ±{r} of each other: {self.interval_text()}; "
                    f"neither beats the other by more than {r}")
        pairs = f"{self.pairs} pair" + ("s" if self.pairs != 1 else "")
        return (f"unresolved: {a} against {b} {self.interval_text()} after {pairs}, not "
                f"decided at ±{r}; measure more pairs")


def decide(low: float, high: float, resolution: float) -> Kind:
    if low > 1 + resolution:
        return "better"
    if high < 1 - resolution:
        return "worse"
    if low > 1 - resolution and high < 1 + resolution:
        return "equivalent"
    return "unresolved"


def step_sd(width: float | None) -> float:
    """The SD of a start's log capacity that the capacity search's steps alone imply: a
    capacity known only to lie in a step of relative width ``width`` (passed its low end,
    failed its high end, nothing measured between) is uniform over it in log load, SD
    log(1 + width) / sqrt(12); 0 for an interpolated one (None)."""
    return math.log1p(width) / math.sqrt(12) if width else 0.0


def step_floor(widths: Sequence[float | None]) -> float:
    """The root mean square of :func:`step_sd` over starts: the least start-to-start SD the
    starts can show. Capacities that land on the same step of the search's grid agree to
    the step, not exactly: their spread of 0 is not a CV of 0."""
    if not widths:
        return 0.0
    return math.sqrt(sum(step_sd(w) ** 2 for w in widths) / len(widths))


def floored(spread: PooledSpread | None, floor: float) -> PooledSpread | None:
    """``spread`` with its SD at least ``floor`` (:func:`step_floor`)."""
    if spread is None or spread.sd >= floor:
        return spread
    return spread.model_copy(update={"sd": floor})


def paired_verdict(log_ratios: Sequence[float], resolution: float, *,
                   pooled: PooledSpread | None = None, level: float = 0.95, family: int = 1,
                   looks: int = 1, floor_sd: float = 0.0) -> RatioVerdict:
    """The verdict of ``log_ratios`` (one per pair, A's advantage) at ``resolution``.
    ``floor_sd``: the least SD of one start's log capacity (:func:`step_floor`); a pair's
    log ratio then varies by at least sqrt(2) times it, whatever the starts showed."""
    n = len(log_ratios)
    if n == 0:
        raise ValueError("a verdict needs at least one pair")
    mean = sum(log_ratios) / n
    alpha = (1 - level) / (family * looks)
    if pooled is not None:
        sd, df, source = math.sqrt(2) * pooled.sd, pooled.df, "pooled"
    elif n >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in log_ratios) / (n - 1))
        df, source = n - 1, "pairs"
    else:
        return RatioVerdict(kind="unresolved", ratio=math.exp(mean), low=None, high=None,
                            resolution=resolution, pairs=n, level=level, spread="pairs")
    sd = max(sd, math.sqrt(2) * floor_sd)
    from scipy.stats import t as student_t  # 0.9 s to import: not at every start of the tool

    half = float(student_t.ppf(1 - alpha / 2, df)) * sd / math.sqrt(n)
    low, high = math.exp(mean - half), math.exp(mean + half)
    return RatioVerdict(kind=decide(low, high, resolution), ratio=math.exp(mean), low=low,
                        high=high, resolution=resolution, pairs=n, level=level,
                        spread=source)  # type: ignore[arg-type]
