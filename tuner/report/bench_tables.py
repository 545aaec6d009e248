"""Terminal tables for the end of a command."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tuner.measurement import CapacityResult, verdict_text
from tuner.metrics import Dist, RunSummary, money
from tuner.report.capacity_text import capacity_headline, stop_reason
from tuner.workload import CapacitySearch


def _ms(d: Dist, key: str) -> str:
    value = getattr(d, key)
    return "-" if value is None else f"{value:.1f}"


def share(value: float) -> str:
    """A share as a percentage with its digits: 0.0001 is 0.01%, not 0.0%."""
    pct = value * 100
    if pct == 0 or pct >= 1:
        return f"{pct:.1f}%"
    return f"{pct:.2g}%"


def count(value: float) -> str:
    """A count or a mean of counts: 3, 0.25, 0.0012."""
    return f"{value:.3g}"


def summary_rows(s: RunSummary) -> list[tuple[str, str]]:
    rows = [
        ("load", f"{s.load:.3g} {s.load_unit}"),
        ("sent", f"{s.requests} requests" + ("" if s.sent_rps is None
                                             else f" at {s.sent_rps:.3g} req/s")),
        ("requests ok / errors", f"{s.completed} / {s.errors} ({s.error_rate:.1%})"),
        ("request throughput", f"{s.request_throughput:.3f} req/s"),
        ("output tokens/s", f"{s.output_token_throughput:.1f}"),
        ("total tokens/s", f"{s.total_token_throughput:.1f}"),
        ("goodput", f"{s.goodput_rps:.3f} req/s"),
        ("cost per M output tokens", money(s.cost_per_m_output_tokens)),
        ("cost per M total tokens", money(s.cost_per_m_total_tokens)),
        ("SLO", verdict_text(s).replace("fail", "FAIL", 1)),
    ]
    if s.stopped_early:
        rows.append(("stopped early", s.stopped_early))
    if s.client_cpu is not None:
        rows.append(("load generator CPU", f"{s.client_cpu:.2f} cores"))
    if s.loop_lag_p99_ms is not None:
        rows.append(("load generator loop lag p99", f"{s.loop_lag_p99_ms:.1f} ms"))
    if s.client_saturated:
        rows.append(("NOT the engine's figures", s.client_saturated))
    if s.mismatched:
        rows.append(("not as planned", f"{s.mismatched} requests (see their `mismatch`)"))
    srv = s.server
    if srv is not None:
        for label, value, fmt in (
            ("KV-cache usage mean / max", (srv.kv_cache_usage_mean, srv.kv_cache_usage_max),
             share),
            ("requests running mean / max", (srv.running_mean, srv.running_max), count),
            ("queue length mean / max", (srv.queue_length_mean, srv.queue_length_max), count),
            ("preemptions", (srv.preemptions,), count),
            ("prefix-cache hit rate", (srv.prefix_cache_hit_rate,), share),
        ):
            if all(v is not None for v in value):
                rows.append((label, " / ".join(fmt(v) for v in value if v is not None)))
        rows.append(("engine metrics", f"{srv.samples} scrapes"))
    else:
        rows.append(("engine metrics", "none: no Prometheus metrics read from the server"))
    if s.own_prefix_share is not None:
        rows.append(("prompt prefixes the run shares", share(s.own_prefix_share)))
    return rows


CACHE_MARGIN = 0.05
"""Server prefix-cache hits this far above the run's own sharing are not the run's."""


def prefix_cache_warning(runs: list[RunSummary]) -> str | None:
    """A line when the server's prefix cache hit more of a run's prompts than the run's own
    sharing explains: it held prompts from before the run (an earlier run with the same seed
    and epoch), so the latencies are better than fresh traffic would get."""
    worst = max(((srv.prefix_cache_hit_rate - s.own_prefix_share, s) for s in runs
                 if (srv := s.server) is not None and srv.prefix_cache_hit_rate is not None
                 and s.own_prefix_share is not None), default=None, key=lambda x: x[0])
    if worst is None or worst[0] <= CACHE_MARGIN:
        return None
    s = worst[1]
    hit = s.server.prefix_cache_hit_rate if s.server else None
    return (f"the server's prefix cache hit {share(hit or 0.0)} of prompt tokens at load "
            f"{s.load:.3g} {s.load_unit}; the run's own sharing explains "
            f"{share(s.own_prefix_share or 0.0)}: it held prompts from before the run (the same "
            "--seed and --epoch again?), so these latencies are better than fresh traffic's; "
            "run with a fresh epoch or restart the server")


def summary_table(s: RunSummary, title: str) -> Group:
    lat = Table(title=title, title_justify="left")
    lat.add_column("ms")
    for col in ("mean", "p50", "p90", "p95", "p99"):
        lat.add_column(col, justify="right")
    for name, d in (("TTFT", s.ttft_ms), ("ITL", s.itl_ms), ("TPOT", s.tpot_ms),
                    ("E2E", s.e2e_ms)):
        lat.add_row(name, *(_ms(d, k) for k in ("mean", "p50", "p90", "p95", "p99")))
    facts = Table(show_header=False)
    facts.add_column()
    facts.add_column(justify="right")
    for name, value in summary_rows(s):
        facts.add_row(name, value)
    return Group(lat, facts)


def step_note(s: RunSummary) -> str | None:
    if s.not_measured:
        return f"not measured: {s.not_measured}"
    return s.client_saturated or (f"stopped early: {s.stopped_early}" if s.stopped_early
                                  else None)


def capacity_table(c: CapacityResult, cfg: CapacitySearch, unit: str) -> Group:
    """Every step (notes below the table, so it fits a piped 80 columns), the capacity with
    its bracket, and why the search stopped."""
    t = Table(title=f"capacity search (load in {unit}; sent: the rate requests went out, "
              "req/s; p95s in ms)", title_justify="left")
    for col in ("step", "load", "sent", "SLO", "TTFT p95", "ITL p95", "out tok/s", "$/M out"):
        t.add_column(col, justify="left" if col == "SLO" else "right")
    notes = []
    for i, s in enumerate(c.steps, 1):
        note = step_note(s)
        if note:
            notes.append(f"step {i}: {note}")
        t.add_row(str(i), f"{s.load:.3g}", "-" if s.sent_rps is None else f"{s.sent_rps:.3g}",
                  "pass" if s.slo.passed else "-" if s.not_measured else "fail",
                  _ms(s.ttft_ms, "p95"), _ms(s.itl_ms, "p95"),
                  f"{s.output_token_throughput:.1f}", money(s.cost_per_m_output_tokens))
    lines = [Text(n) for n in notes]
    lines += [Text(capacity_headline(c, unit), style="bold"), Text(stop_reason(c, cfg, unit))]
    return Group(t, *lines)
