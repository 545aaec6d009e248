"""Picking a point of a study's trade-off front: the cheapest, the fastest, or the cheapest
under latency bounds tighter than the workload's SLOs (``ttft_p95_ms<=300,itl_p95_ms<=40``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tuner.core import ConfigError
from tuner.metric_registry import BY_KEY, OBJECTIVES
from tuner.metrics import money
from tuner.study.results.pareto import TradeOff

BOUNDED = tuple(m.key for m in OBJECTIVES if m.better == "lower")
"""The figures a pick may bound: the trade-off's objectives."""
_BOUND = re.compile(r"^\s*([a-z0-9_]+)\s*<=\s*([0-9]*\.?[0-9]+)\s*$")
USAGE = ("give cheapest, fastest, or bounds such as ttft_p95_ms<=300 (comma-separated; "
         f"bounded: {', '.join(BOUNDED)})")


@dataclass(frozen=True)
class Pick:
    """How to choose: ``cheapest``, ``fastest``, or the cheapest within ``bounds``."""

    how: str
    bounds: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        if self.how != "bounded":
            return self.how
        return ",".join(f"{k}<={v:g}" for k, v in self.bounds.items())


def parse_pick(text: str) -> Pick:
    """``--pick``'s value, or a ConfigError naming what is wrong and what to give."""
    word = text.strip().lower()
    if word in ("cheapest", "fastest"):
        return Pick(word)
    bounds: dict[str, float] = {}
    for part in word.split(","):
        found = _BOUND.match(part)
        if found is None:
            raise ConfigError(f"--pick {text!r}: {USAGE}")
        name, value = found.group(1), float(found.group(2))
        if name not in BOUNDED:
            raise ConfigError(f"--pick {text!r}: {name} cannot be bounded; {USAGE}")
        bounds[name] = value
    return Pick("bounded", bounds)


def _within(p: TradeOff, bounds: dict[str, float]) -> bool:
    """Every bound holds (a figure the point lacks: a missing ITL is the worst, and a point
    not judged on a figure cannot be shown to meet its bound)."""
    def figure(key: str) -> float:
        value = p.figure(BY_KEY[key])
        return math.inf if value is None else value

    return all(figure(k) <= v for k, v in bounds.items())


def choose(front: list[TradeOff], pick: Pick) -> TradeOff:
    """The point of ``front`` that ``pick`` asks for; a ConfigError when none qualifies."""
    if not front:
        raise ConfigError("no trial of this study met the SLOs: there is nothing to pick")
    if pick.how == "cheapest":
        return min(front, key=lambda p: p.objectives())
    if pick.how == "fastest":
        return min(front, key=lambda p: (p.objectives()[1:], p.cost_per_m_output_tokens))
    within = [p for p in front if _within(p, pick.bounds)]
    if not within:
        fastest = choose(front, Pick("fastest"))
        raise ConfigError(
            f"--pick {pick.text()}: no trial is that fast; the fastest, trial {fastest.trial}, "
            f"has {figures_text(fastest)} at {money(fastest.cost_per_m_output_tokens)}/M "
            "output tokens: loosen the bound")
    return min(within, key=lambda p: p.objectives())


def figures_text(p: TradeOff) -> str:
    """``p95 TTFT 41.2 ms and p95 ITL 6.3 ms``: the point's objective figures."""
    parts = [f"{m.label} {_figure(p.figure(m), m.unit)}" for m in p.measured()]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


def _figure(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:.1f} {unit}"
