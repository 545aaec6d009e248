"""The study's trade-offs: the Pareto front of cost against latency over its feasible trials.

A trial that met the SLOs is a point: its cost per million output tokens at the highest load
that met them, and the p95 TTFT and p95 ITL of that load's step. A point is on the front when
no other point is at least as good on all three (cost, p95 TTFT, p95 ITL) and better on one.
The cheapest trial under any latency bound is on the front, so a pick
(:mod:`tuner.study.results.pick`) only ever looks at it. A missing p95 ITL (one-token
outputs) counts as the worst.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from tuner.study.outcome import TrialResult


class TradeOff(BaseModel):
    """One feasible trial as a point of the trade-off."""

    trial: int
    defaults: bool
    cost_per_m_output_tokens: float
    ttft_p95_ms: float
    itl_p95_ms: float | None
    max_load: float
    accelerators: int
    config: dict[str, Any]

    def objectives(self) -> tuple[float, float, float]:
        """What the front minimises: cost, p95 TTFT, p95 ITL (missing: the worst)."""
        itl = math.inf if self.itl_p95_ms is None else self.itl_p95_ms
        return self.cost_per_m_output_tokens, self.ttft_p95_ms, itl


def tradeoff_points(results: list[TrialResult]) -> list[TradeOff]:
    """The trials that met the SLOs, as points (those without a measured step are left out)."""
    out = []
    for r in results:
        if not r.feasible or r.best is None or r.best.ttft_ms.p95 is None:
            continue
        assert r.cost_per_m_output_tokens is not None
        out.append(TradeOff(trial=r.number, defaults=r.defaults,
                            cost_per_m_output_tokens=r.cost_per_m_output_tokens,
                            ttft_p95_ms=r.best.ttft_ms.p95, itl_p95_ms=r.best.itl_ms.p95,
                            max_load=r.max_load or 0.0, accelerators=r.accelerators,
                            config=r.config))
    return out


def dominates(a: TradeOff, b: TradeOff) -> bool:
    """``a`` is at least as good as ``b`` on every objective and better on one."""
    pa, pb = a.objectives(), b.objectives()
    return all(x <= y for x, y in zip(pa, pb, strict=True)) and pa != pb


def pareto_front(points: list[TradeOff]) -> list[TradeOff]:
    """The points no other point dominates, cheapest first (of equal points, the first
    trial)."""
    front: list[TradeOff] = []
    for p in sorted(points, key=lambda p: (p.objectives(), p.trial)):
        if not any(dominates(q, p) or q.objectives() == p.objectives() for q in front):
            front.append(p)
    return front


def study_front(results: list[TrialResult]) -> list[TradeOff]:
    """The front of a study's finished trials."""
    return pareto_front(tradeoff_points(results))
