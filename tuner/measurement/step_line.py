"""One line per measured run, for logs: what was sent and served, the p95s and the verdict."""

from __future__ import annotations

from tuner.metrics import RunSummary


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def verdict_text(s: RunSummary) -> str:
    """pass, fail (the checks that failed), or not measured (why)."""
    if s.not_measured:
        return f"not measured ({s.not_measured})"
    return "pass" if s.slo.passed else f"fail ({', '.join(s.slo.failed()) or 'cut'})"


def step_line(label: str, s: RunSummary) -> str:
    """``step 2, load 4 req/s: sent 60 (3.9 req/s), done 60, errors 0, p95 TTFT 41.2 ms,
    p95 ITL 9.1 ms: pass``."""
    verdict = verdict_text(s)
    if s.stopped_early:
        verdict += f"; stopped early: {s.stopped_early}"
    rate = "" if s.sent_rps is None else f" ({s.sent_rps:.3g} req/s)"
    return (f"{label}: sent {s.requests}{rate}, done {s.completed}, errors {s.errors}, "
            f"p95 TTFT {_ms(s.ttft_ms.p95)}, p95 ITL {_ms(s.itl_ms.p95)}: {verdict}")
