"""The study's trade-offs: the Pareto front of cost against latency over its feasible trials.

A trial that met the SLOs is a point: its cost per million output tokens at the highest load
that met them, and the figures of that load's step that the metric registry makes objectives
and the run was judged on (p95 TTFT and p95 ITL always; p99 E2E when the workload bounds it).
A point is on the front when no other point is at least as good on all of them and better on
one. The cheapest trial under any latency bound is on the front, so a pick
(:mod:`tuner.study.results.pick`) only ever looks at it. A missing figure (no ITL of one-token
outputs) counts as the worst.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from tuner.metric_registry import OBJECTIVES, Metric
from tuner.study.outcome import TrialResult


class TradeOff(BaseModel):
    """One feasible trial as a point of the trade-off. Its objective figures are fields named
    by their metric's key (``ttft_p95_ms``), as the registry lists them."""

    model_config = ConfigDict(extra="allow")

    trial: int
    defaults: bool
    cost_per_m_output_tokens: float
    max_load: float
    load_bound: bool = False
    """``max_load`` is a lower bound (no load failed), and the cost an upper bound."""
    accelerators: int
    config: dict[str, Any]

    def load_text(self) -> str:
        return f"≥ {self.max_load:.3g}" if self.load_bound else f"{self.max_load:.3g}"

    def measured(self) -> list[Metric]:
        """The objectives this point was judged on, in the registry's order."""
        extra = self.model_extra or {}
        return [m for m in OBJECTIVES if m.key in extra]

    def figure(self, metric: Metric) -> float | None:
        value = (self.model_extra or {}).get(metric.key)
        return None if value is None else float(value)

    def objectives(self) -> tuple[float, ...]:
        """What the front minimises: cost, then each objective (missing: the worst; a figure
        where higher is better, negated)."""
        out = [self.cost_per_m_output_tokens]
        for m in self.measured():
            value = self.figure(m)
            value = m.worst() if value is None else value
            out.append(value if m.better == "lower" else -value)
        return tuple(out)


def tradeoff_points(results: list[TrialResult]) -> list[TradeOff]:
    """The trials that met the SLOs, as points (those without a measured step are left out)."""
    out = []
    for r in results:
        if not r.feasible or r.best is None:
            continue
        judged = {c.name for c in r.best.slo.checks}
        figures = {m.key: m.value(r.best) for m in OBJECTIVES
                   if m.key in judged or (m.slo is not None and m.slo.default == "required")}
        if any(figures[m.key] is None and not (m.slo and m.slo.absent_passes)
               for m in OBJECTIVES if m.key in figures):
            continue
        assert r.cost_per_m_output_tokens is not None
        out.append(TradeOff(trial=r.number, defaults=r.defaults,
                            cost_per_m_output_tokens=r.cost_per_m_output_tokens,
                            max_load=r.max_load or 0.0, load_bound=r.capacity_bound,
                            accelerators=r.accelerators,
                            config=r.config, **figures))
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
