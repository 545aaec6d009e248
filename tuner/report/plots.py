"""The comparison's plots, as PNG files (matplotlib, no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuner.report.comparison import Comparison, TrialPoint


def _pyplot() -> Any:
    """matplotlib's pyplot with no display (Agg), imported at the first plot: it takes a
    second, which the commands that draw nothing (and this module's importers) skip."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _xy(points: list[Any], x: str, y: str) -> tuple[list[float], list[float]]:
    """The (x, y) pairs of ``points`` where both attributes are set."""
    pairs = [(getattr(p, x), getattr(p, y)) for p in points]
    kept = [(a, b) for a, b in pairs if a is not None and b is not None]
    return [float(a) for a, _ in kept], [float(b) for _, b in kept]


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def pareto(points: list[TrialPoint]) -> list[TrialPoint]:
    """Points no other point beats on both cost and p95 TTFT."""
    usable = sorted((p for p in points if p.cost is not None and p.ttft_p95_ms is not None),
                    key=lambda p: (p.ttft_p95_ms, p.cost))
    front: list[TrialPoint] = []
    for p in usable:
        if not front or (p.cost or 0) < (front[-1].cost or 0):
            front.append(p)
    return front


def cost_bars(c: Comparison, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.38
    for i, e in enumerate(c.engines):
        for j, (label, m) in enumerate((("defaults", e.defaults), ("tuned", e.tuned))):
            if m is None or m.cost is None:
                continue
            x = i + (j - 0.5) * width
            err = [[m.cost.value - m.cost.low], [m.cost.high - m.cost.value]]
            ax.bar(x, m.cost.value, width, yerr=err, capsize=4,
                   color="#9aa7b8" if label == "defaults" else "#2f6db5",
                   label=label if i == 0 else None)
    ax.set_xticks(range(len(c.engines)), [e.display_name for e in c.engines])
    ax.set_ylabel("USD per million output tokens (95% CI)")
    ax.set_title("Cost at the highest load that meets the SLOs: defaults vs tuned")
    ax.legend()
    return _save(fig, path)


def trials_scatter(c: Comparison, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, e in enumerate(c.engines):
        pts = [p for p in e.trials if p.cost is not None and p.ttft_p95_ms is not None]
        ax.scatter(*_xy(pts, "ttft_p95_ms", "cost"), color=colours[i % 10],
                   label=f"{e.display_name} ({len(pts)} of {len(e.trials)} trials met the SLOs)",
                   alpha=0.8)
        front = pareto(pts)
        if front:
            ax.plot(*_xy(front, "ttft_p95_ms", "cost"), "--",
                    color=colours[i % 10], linewidth=1)
    ax.axvline(c.slo_ttft_p95_ms, color="red", linestyle=":", label="p95 TTFT SLO")
    ax.set_xlabel("p95 TTFT at the sustainable load (ms)")
    ax.set_ylabel("USD per million output tokens")
    ax.set_title("Every trial that met the SLOs, with each engine's Pareto front")
    ax.legend(fontsize=8)
    return _save(fig, path)


def capacity_curves(c: Comparison, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for e in c.engines:
        pts = [p for p in e.tuned_curve if p.ttft_p95_ms is not None]
        if not pts:
            continue
        line = ax.plot(*_xy(pts, "load", "ttft_p95_ms"), "-o",
                       label=f"{e.display_name} (tuned)")[0]
        failed = [p for p in pts if not p.passed]
        ax.scatter(*_xy(failed, "load", "ttft_p95_ms"), marker="x",
                   s=80, color=line.get_color())
    ax.axhline(c.slo_ttft_p95_ms, color="red", linestyle=":", label="p95 TTFT SLO")
    ax.set_xlabel("load (requests/s, or concurrency)")
    ax.set_ylabel("p95 TTFT (ms)")
    ax.set_yscale("log")
    ax.set_title("Capacity search of each engine's tuned best (x: step failed the SLOs)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def all_plots(c: Comparison, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {"cost": cost_bars(c, folder / "cost.png"),
            "trials": trials_scatter(c, folder / "trials.png"),
            "capacity": capacity_curves(c, folder / "capacity.png")}
