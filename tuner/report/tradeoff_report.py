"""A study's trade-offs: its Pareto front as a terminal table, and a plot of every feasible
trial's cost against its p95 TTFT and p95 ITL with the front marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from tuner.metrics import money
from tuner.study.results import Pick, TradeOff, choose


def distinguishing_knobs(front: list[TradeOff]) -> list[str]:
    """The knobs whose values differ between the front's points (what the choice is about)."""
    names = sorted({k for p in front for k in p.config})
    return [k for k in names if len({repr(p.config.get(k)) for p in front}) > 1]


def front_table(study: str, front: list[TradeOff], feasible: int) -> Table:
    t = Table(title=f"{study}: cost against latency, the Pareto front ({len(front)} of "
              f"{feasible} trials that met the SLOs)", title_justify="left")
    for col in ("trial", "$/M output tokens", "p95 TTFT ms", "p95 ITL ms", "load",
                "accelerators", "knobs"):
        t.add_column(col, justify="left" if col in ("trial", "knobs") else "right")
    knobs = distinguishing_knobs(front)
    marks = _marks(front)
    for p in front:
        itl = "-" if p.itl_p95_ms is None else f"{p.itl_p95_ms:.1f}"
        label = f"{p.trial}{' (defaults)' if p.defaults else ''}{marks.get(p.trial, '')}"
        t.add_row(label, money(p.cost_per_m_output_tokens), f"{p.ttft_p95_ms:.1f}", itl,
                  f"{p.max_load:.3g}", str(p.accelerators),
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
    """Cost against p95 TTFT (left) and p95 ITL (right); front points labelled by trial."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    on_front = {p.trial for p in front}
    for ax, latency, label in ((axes[0], "ttft_p95_ms", "p95 TTFT (ms)"),
                               (axes[1], "itl_p95_ms", "p95 ITL (ms)")):
        _panel(ax, points, on_front, latency)
        if slo and latency in slo:
            ax.axvline(slo[latency], color="red", linestyle=":", label="SLO")
        ax.set_xlabel(f"{label} at the highest load that met the SLOs")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("USD per million output tokens")
    fig.suptitle("Every trial that met the SLOs; the Pareto front over cost, p95 TTFT and "
                 "p95 ITL in orange")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _panel(ax: Any, points: list[TradeOff], on_front: set[int], latency: str) -> None:
    def xy(ps: list[TradeOff]) -> tuple[list[float], list[float]]:
        kept = [p for p in ps if getattr(p, latency) is not None]
        return ([float(getattr(p, latency)) for p in kept],
                [p.cost_per_m_output_tokens for p in kept])

    others = [p for p in points if p.trial not in on_front]
    front = [p for p in points if p.trial in on_front]
    ax.scatter(*xy(others), color="#9aa7b8", label="trial")
    ax.scatter(*xy(front), color="#e07b00", label="on the front", zorder=3)
    for p in front:
        if getattr(p, latency) is not None:
            ax.annotate(str(p.trial), (getattr(p, latency), p.cost_per_m_output_tokens),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)
