"""A study's trials as one CSV table (``tune report`` writes ``trials.csv``): for a
spreadsheet or a notebook, one row per trial of this host.

The columns: the trial, whether it ran the defaults, its outcome, its capacity (a bound as
``≥ 24 (not bracketed)``, never as a number) and cost there,
then each figure the metric registry marks as a column (read from the step at that capacity,
empty for a trial that met no load), then its knobs (``knob.<name>``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from tuner.metric_registry import METRICS
from tuner.study import TrialResult

LEADING = ("trial", "defaults", "outcome", "max_load", "cost_per_m_output_tokens")


def write_trials_csv(trials: list[TrialResult], path: Path) -> Path:
    """Write ``trials`` to ``path``; every knob any trial set is a column."""
    figures = [m for m in METRICS if m.column]
    knobs = sorted({k for t in trials for k in t.config})
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow([*LEADING, *(m.key for m in figures), *(f"knob.{k}" for k in knobs)])
        for t in sorted(trials, key=lambda t: t.number):
            values = [None if t.best is None else m.value(t.best) for m in figures]
            out.writerow([t.number, t.defaults, t.outcome,
                          t.load_text("{}") if t.max_load is not None else "",
                          _cell(t.cost_per_m_output_tokens), *map(_cell, values),
                          *(_cell(t.config.get(k)) for k in knobs)])
    return path


def _cell(value: object) -> str:
    return "" if value is None else str(value)
