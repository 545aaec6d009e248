"""A study's trade-offs: its Pareto front as a terminal table, and a plot of every feasible
trial's cost against its p95 TTFT and p95 ITL with the front marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from tuner.metric_registry import Metric
from tuner.metrics import money
from tuner.study.results import Pick, TradeOff, choose


def distinguishing_knobs(front: list[TradeOff]) -> list[str]:
    """The knobs whose values differ between the front's points (what the choice is about)."""
    names = sorted({k for p in front for k in p.config})
    return [k for k in names if len({repr(p.config.get(k)) for p in front}) > 1]


def front_table(study: str, front: list[TradeOff], feasible: int) -> Table:
    t = Table(title=f"{study}: cost against latency, the Pareto front ({len(front)} of "
              f"{feasible} trials that met the SLOs)", title_justify="left")
    shown = front[0].measured() if front else []
    for col in ("trial", "$/M output tokens", *(f"{m.label} {m.unit}" for m in shown), "load",
                "accelerators", "knobs"):
        t.add_column(col, justify="left" if col in ("trial", "knobs") else "right")
    knobs = distinguishing_knobs(front)
    marks = _marks(front)
    for p in front:
        label = f"{p.trial}{' (defaults)' if p.defaults else ''}{marks.get(p.trial, '')}"
        figures = ["-" if (v := p.figure(m)) is None else f"{v:.1f}" for m in shown]
        t.add_row(label, money(p.cost_per_m_output_tokens), *figures,
                  p.load_text(), str(p.accelerators),
                  ", ".join(f"{k}={p.config.get(k)}" for k in knobs))
    return t


def _marks(front: list[TradeOff]) -> dict[int, str]:
    if not front:
        return {}
    cheapest, fastest = choose(front, Pick("cheapest")), choose(front, Pick("fastest"))
    marks = {cheapest.trial: " cheapest"}
    marks[fastest.trial] = marks.get(fastest.trial, "") + " fastest"
    return marks


def tradeoff_plot(points: list[TradeOff], front: list[TradeOff], path: Path,
                  slo: dict[str, float] | None = None) -> Path:
    """Cost against each objective the points were judged on (p95 TTFT, p95 ITL, and p99 E2E
    when bounded), one panel each; front points labelled by trial."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = points[0].measured() if points else []
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(5.5 * max(len(shown), 1), 4.5),
                             sharey=True, squeeze=False)
    on_front = {p.trial for p in front}
    for ax, metric in zip(axes[0], shown, strict=False):
        _panel(ax, points, on_front, metric)
        if slo and metric.key in slo:
            ax.axvline(slo[metric.key], color="red", linestyle=":", label="SLO")
        ax.set_xlabel(f"{metric.label} ({metric.unit}) at the highest load that met the SLOs")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("USD per million output tokens")
    fig.suptitle("Every trial that met the SLOs; the Pareto front over cost, "
                 f"{_and([m.label for m in shown])} in orange")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _panel(ax: Any, points: list[TradeOff], on_front: set[int], metric: Metric) -> None:
    def xy(ps: list[TradeOff]) -> tuple[list[float], list[float]]:
        kept = [(v, p) for p in ps if (v := p.figure(metric)) is not None]
        return [v for v, _ in kept], [p.cost_per_m_output_tokens for _, p in kept]

    others = [p for p in points if p.trial not in on_front]
    front = [p for p in points if p.trial in on_front]
    ax.scatter(*xy(others), color="#9aa7b8", label="trial")
    ax.scatter(*xy(front), color="#e07b00", label="on the front", zorder=3)
    for p in front:
        value = p.figure(metric)
        if value is not None:
            ax.annotate(str(p.trial), (value, p.cost_per_m_output_tokens),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)


def _and(words: list[str]) -> str:
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
