"""The comparison as a terminal table, markdown and a self-contained HTML page."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from rich.table import Table

from tuner.metrics import Interval
from tuner.report.comparison import Comparison, EngineDelta, EngineResult
from tuner.report.study_report import capacity_text


def _money(i: Interval | None, sep: str = " ", digits: int = 4) -> str:
    if i is None:
        return "-"
    return f"${i.value:.{digits}g}{sep}({i.low:.{digits}g}-{i.high:.{digits}g})"


def _ratio(i: Interval | None, sep: str = " ") -> str:
    return "-" if i is None else f"{i.value:.2f}x{sep}({i.low:.2f}-{i.high:.2f})"


def rows(c: Comparison, sep: str = " ", digits: int = 4) -> list[list[str]]:
    """One row per engine; ``sep`` goes between a figure and its interval."""
    out = []
    for e in c.engines:
        out.append([e.display_name, _money(e.defaults.cost if e.defaults else None, sep, digits),
                    _money(e.tuned.cost if e.tuned else None, sep, digits),
                    tuning_cell(e, sep),
                    capacity_text(e.tuned.capacities) if e.tuned else "-",
                    e.note])
    return out


def tuning_cell(e: EngineResult, sep: str = " ") -> str:
    """The tuning delta as its paired verdict decided it (tuned against the defaults, start
    by start); the bootstrap over requests only where no pair of starts exists."""
    v = e.tuning_verdict
    if v is None:
        over = " over requests" if e.tuning_delta is not None and e.tuned is not None and (
            e.defaults is not None and e.tuned.trial != e.defaults.trial) else ""
        return _ratio(e.tuning_delta, sep) + over
    text = v.interval_text().replace(" (", f"{sep}(", 1)
    return f"{text} paired, " + {"better": "resolved", "worse": "worse, resolved",
                                 "equivalent": f"within ±{v.resolution:.0%}",
                                 "unresolved": "unresolved"}[v.kind]


HEAD = ["engine", "defaults $/M out", "tuned $/M out", "tuning delta", "tuned capacity", "note"]


def called(d: EngineDelta) -> str:
    """Whether a winner is called, and on what: the paired verdict when there is one."""
    v = d.verdict
    if v is None:
        return "yes (over requests)" if d.winner_called else "no (intervals overlap)"
    return {"better": f"yes: {v.interval_text()} paired, resolved",
            "worse": f"no: the other, {v.interval_text()} paired",
            "equivalent": f"no: within ±{v.resolution:.0%} ({v.interval_text()} paired)",
            "unresolved": f"no: unresolved ({v.interval_text()} paired)"}[v.kind]


def delta_rows(c: Comparison) -> list[list[str]]:
    return [[d.kind, d.best, d.other, _ratio(d.ratio), called(d)] for d in c.engine_deltas]


DELTA_HEAD = ["compared", "best", "other", "engine delta (other/best)", "winner called"]


OPS_HEAD = ["engine", "version", "start-up to ready", "/health before it serves",
            "Prometheus metrics", "status"]


def operations_rows(c: Comparison) -> list[list[str]]:
    """What an operator lives with, per engine: measured on the study's starts where it can
    be, the status as the engine's spec records it."""
    out = []
    for e in c.engines:
        if e.operations is not None:
            startup, health, metrics, status = e.operations.cells()
            out.append([e.display_name, e.engine_version, startup, health, metrics, status])
    return out


OPS_NOTE = ("Start-up is from launch to the first completion served, the median of the study's "
            "starts that got ready; \"/health before it serves\" is whether the health "
            "endpoint answered 200 on an earlier readiness poll than the first completion; "
            "metrics are the families the engine's Prometheus endpoint exposed once ready.")


def table(c: Comparison) -> Table:
    """The terminal's table, 80 columns wide: each interval under its figure, three digits; the
    notes go below it (:func:`notes`)."""
    t = Table(title=f"tuning delta vs engine delta on {c.workload}", title_justify="left")
    for h in [*HEAD[:-2], "capacity"]:
        t.add_column(h, no_wrap=True)
    for r in rows(c, sep="\n", digits=3):
        t.add_row(*r[:-1])
    return t


def notes(c: Comparison) -> list[str]:
    """One line per engine with a note: what the table cannot say."""
    return [f"{e.display_name}: {e.note}" for e in c.engines if e.note]


def markdown(c: Comparison, plots: dict[str, Path]) -> str:
    def md_table(head: list[str], body: list[list[str]]) -> str:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)

    parts = [f"# Tuning delta vs engine delta: {c.workload}", "", f"**{c.verdict}**", "",
             "Costs are USD per million output tokens at the capacity (the load at which the "
             "binding SLO is crossed), re-measured by a capacity search on each fresh engine "
             "start, with 95% bootstrap intervals over restarts and requests.", "",
             md_table(HEAD, rows(c)), ""]
    if c.engine_deltas:
        parts += ["## Engine delta", "", md_table(DELTA_HEAD, delta_rows(c)), ""]
    for name, title in (("cost", "Cost per engine, defaults vs tuned"),
                        ("trials", "Every trial: cost against p95 TTFT"),
                        ("capacity", "Capacity curves of the tuned configurations")):
        if name in plots:
            parts += [f"## {title}", "", f"![{title}]({plots[name].name})", ""]
    ops = operations_rows(c)
    if ops:
        parts += ["## What an operator lives with", "", OPS_NOTE, "", md_table(OPS_HEAD, ops), ""]
    parts += ["## Engines", ""]
    parts += [engine_section(e) for e in c.engines]
    return "\n".join(parts) + "\n"


def engine_section(e: EngineResult) -> str:
    lines = [f"### {e.display_name} ({e.engine_version})", "",
             f"Study: `{e.study_dir}`; {len(e.trials)} launched trials."]
    if e.tuned is not None:
        lines += ["", "Tuned configuration:", "", "```", ", ".join(
            f"{k}={v}" for k, v in sorted(e.tuned.config.items())) or "(defaults)", "```"]
    if e.note:
        lines += ["", e.note]
    return "\n".join(lines) + "\n"


def html_page(c: Comparison, plots: dict[str, Path]) -> str:
    def h_table(head: list[str], body: list[list[str]]) -> str:
        th = "".join(f"<th>{html.escape(x)}</th>" for x in head)
        trs = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>"
                      for r in body)
        return f"<table><tr>{th}</tr>{trs}</table>"

    imgs = "".join(
        f'<h2>{html.escape(name)}</h2><img alt="{html.escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(path.read_bytes()).decode()}">' for name, path in plots.items())
    deltas = (f"<h2>Engine delta</h2>{h_table(DELTA_HEAD, delta_rows(c))}"
              if c.engine_deltas else "")
    ops = operations_rows(c)
    operator = (f"<h2>What an operator lives with</h2><p>{html.escape(OPS_NOTE)}</p>"
                f"{h_table(OPS_HEAD, ops)}" if ops else "")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>tuner comparison</title>"
        "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}"
        "img{max-width:100%}</style></head><body>"
        f"<h1>Tuning delta vs engine delta: {html.escape(c.workload)}</h1>"
        f"<p><b>{html.escape(c.verdict)}</b></p>{h_table(HEAD, rows(c))}{deltas}{operator}{imgs}"
        "</body></html>\n")
