"""The table ``tune measure`` prints: each fresh start's capacity and cost, then their spread."""

from __future__ import annotations

from rich.table import Table

from tuner.metrics import Spread, money
from tuner.study import TrialResult


def measure_table(results: list[TrialResult], sides: list[str] | None = None, *,
                  title: str) -> Table:
    """One row per start; ``sides`` names the configuration of each (a paired measure)."""
    t = Table(title=title, title_justify="left")
    cols = ("start", *(("configuration",) if sides else ()), "capacity", "bracket",
            "binding SLO", "$/M out", "warm-up")
    for col in cols:
        t.add_column(col, justify="left" if col in ("binding SLO", "configuration")
                     else "right", no_wrap=col != "binding SLO")
    for r in results:
        found = r.capacity.estimate if r.capacity else None
        warm = r.capacity.warmup if r.capacity else None
        bracket = ("-" if found is None else f"{found.low:.3g}-" +
                   (f"{found.high:.3g}" if found.high is not None else "?"))
        warmed = "-" if warm is None else (f"{warm.seconds:.0f}s" +
                                           ("" if warm.stable else " (unsettled)"))
        t.add_row(str(r.number + 1), *((sides[r.number],) if sides else ()), r.load_text(),
                  bracket, (found.binding or "-") if found else r.outcome,
                  money(r.cost_per_m_output_tokens), warmed)
    return t


def spread_lines(capacity: Spread | None, cost: Spread | None, unit: str) -> list[str]:
    """The noise of the measurement, one line per figure."""
    return [f"{label}: {s.text(fmt)}" for label, s, fmt in (
        (f"capacity ({unit})", capacity, "{:.3g}"), ("$/M output tokens", cost, "${:.4g}"))
        if s is not None]
