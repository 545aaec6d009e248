"""One run's figures, its SLO verdict and its cost, as a serialisable model."""

from __future__ import annotations

from pydantic import BaseModel

from tuner.loadgen import RunOutcome, ServerCaps, ServerMetrics
from tuner.metric_registry import LATENCIES, SLO_METRICS
from tuner.metrics import figures as f
from tuner.metrics.cost import cost_per_million
from tuner.metrics.keep_up import KeepUp, keep_up
from tuner.workload import Workload


class SloCheck(BaseModel):
    name: str
    value: float | None
    bound: float
    ok: bool


class SloVerdict(BaseModel):
    passed: bool
    checks: list[SloCheck]

    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]


class RunSummary(BaseModel):
    """Every figure of one run at one load."""

    load: float
    load_unit: str = "req/s"
    """What ``load`` counts: req/s, sessions/s (conversations) or concurrent requests."""
    sent_rps: float | None = None
    """The rate measured requests were actually sent at: (n - 1) / (last send - first send)."""
    planned: int | None
    requests: int
    completed: int
    errors: int
    error_rate: float
    duration_s: float
    stopped_early: str | None
    not_measured: str | None = None
    """Why the run has no figures (no measured request): it is neither a pass nor a fail."""
    ttft_ms: f.Dist
    itl_ms: f.Dist
    tpot_ms: f.Dist
    e2e_ms: f.Dist
    request_throughput: float
    input_token_throughput: float
    output_token_throughput: float
    total_token_throughput: float
    goodput_rps: float
    slo: SloVerdict
    accelerators: int
    usd_per_hour: float
    cost_per_m_output_tokens: float | None
    cost_per_m_total_tokens: float | None
    output_lengths_forced: bool
    output_length_match: float | None
    input_length_match: float | None
    mismatched: int = 0
    """Measured requests served other than planned (see each record's ``mismatch``)."""
    chat_template_tokens: int | None
    dispatch_lag_ms: f.Dist
    server: ServerMetrics | None
    error_samples: list[str]
    client_cpu: float | None = None
    """Cores of CPU the load generator used during the run."""
    loop_lag_p99_ms: float | None = None
    client_saturated: str | None = None
    """Why the load generator was itself the bottleneck in this run, or None."""
    offered_tokens_per_s: float | None = None
    """Open loop: output tokens offered per second over the steady window (see keep_up)."""
    delivered_tokens_per_s: float | None = None
    own_prefix_share: float | None = None
    """Share of the run's prompts its own earlier prompts explain to a prefix cache: a server
    hit rate above it comes from prompts cached before the run."""


def slo_verdict(w: Workload, figures: dict[str, float | None], completed: int) -> SloVerdict:
    """Each bound of the workload against the run's figure (by metric key); a run without
    a figure whose absence passes (no ITL of one-token outputs) passes it when requests
    completed."""
    out = []
    for metric, bound in w.slo.bounds().items():
        assert metric.slo is not None
        value = figures.get(metric.key)
        ok = value <= bound if value is not None else metric.slo.absent_passes and completed > 0
        out.append(SloCheck(name=metric.key, value=value, bound=bound, ok=ok))
    return SloVerdict(passed=completed > 0 and all(c.ok for c in out), checks=out)


KEEP_UP_CHECKS = frozenset({"throughput", "backlog"})
"""The checks of the engine keeping up with the offered load (not metrics of the registry)."""


def with_keep_up(verdict: SloVerdict, kept: KeepUp, tolerance: float) -> SloVerdict:
    """The verdict with the engine's keeping up: delivered >= (1 - tolerance) x offered output
    tokens over the steady window, give or take one request's tokens (the window's edges:
    :meth:`KeepUp.ratio_high`), and a backlog within three times its steady state (+8)."""
    checks = [*verdict.checks,
              SloCheck(name="throughput", value=kept.ratio, bound=1 - tolerance,
                       ok=kept.ratio_high() >= 1 - tolerance),
              SloCheck(name="backlog", value=kept.in_flight, bound=kept.backlog_limit(),
                       ok=kept.in_flight <= kept.backlog_limit())]
    return SloVerdict(passed=verdict.passed and all(c.ok for c in checks[-2:]), checks=checks)


class _Figures:
    """What the SLO metrics read before the run's summary exists: its latency distributions
    (``<name>_ms``) and error rate."""

    def __init__(self, dists: dict[str, f.Dist], error_rate: float) -> None:
        for name, dist in dists.items():
            setattr(self, f"{name}_ms", dist)
        self.error_rate = error_rate


def unmeasured(outcome: RunOutcome) -> str:
    """Why a run that was not cut has no measured request."""
    sent = outcome.records  # a record joins the run when its request is sent
    if not sent:
        return "no request was sent"
    if all(r.warmup for r in sent):
        return (f"all {len(sent)} requests sent were warm-up (warmup.requests or "
                "warmup.duration_s cover the whole run): give a longer run or less warm-up")
    return f"all {len(sent)} requests sent were cancelled before they ended"


def summarise(outcome: RunOutcome, w: Workload, caps: ServerCaps, accelerators: int = 1
              ) -> RunSummary:
    recs = f.measured(outcome.records)
    ok = [r for r in recs if r.ok]
    window_s = f.window_ns(recs) / 1e9
    if outcome.open_loop and outcome.load > 0 and not w.has_sessions:
        # n requests offered at a rate stand for n / rate seconds: a step's throughput is never
        # taken over less (one request at 0.25 req/s is 4 s of load, not its own latency).
        window_s = max(window_s, len(recs) / outcome.load)
    out_tokens = sum(r.generated for r in ok)
    in_tokens = sum(r.prompt_tokens if r.prompt_tokens is not None else r.input_tokens
                    for r in ok)
    dists = {lat.name: f.latency_dist(lat, recs) for lat in LATENCIES}
    err = f.error_rate(recs)
    figures = {m.key: m.value(_Figures(dists, err)) for m in SLO_METRICS}
    verdict = slo_verdict(w, figures, len(ok))
    kept = keep_up(recs) if outcome.open_loop else None
    if kept is not None:
        verdict = with_keep_up(verdict, kept, w.capacity.keep_up_tolerance)
    if outcome.stopped_early:  # the run was cut: it failed whatever the partial figures say
        verdict = SloVerdict(passed=False, checks=verdict.checks)
    bounds = w.slo_bounds_ns()
    good = sum(f.meets_slo(r, bounds) for r in recs)

    def per_s(n: float) -> float:
        return n / window_s if window_s > 0 else 0.0

    price = w.cost.usd_per_hour_for(accelerators)
    sized = [r for r in ok if r.output_tokens is not None]
    prompted = [r for r in ok if r.prompt_tokens is not None]
    offset = caps.chat_template_tokens or 0
    sends = sorted(r.sent_ns for r in recs)
    sent_span_s = (sends[-1] - sends[0]) / 1e9 if len(sends) > 1 else 0.0
    return RunSummary(
        not_measured=None if recs or outcome.stopped_early else unmeasured(outcome),
        load=outcome.load,
        load_unit=w.load_unit,
        sent_rps=(len(sends) - 1) / sent_span_s if sent_span_s > 0 else None,
        planned=outcome.planned,
        requests=len(recs),
        completed=len(ok),
        errors=sum(r.error is not None for r in recs),
        error_rate=err,
        duration_s=window_s,
        stopped_early=outcome.stopped_early,
        **{f"{name}_ms": dist for name, dist in dists.items()},
        request_throughput=per_s(len(ok)),
        input_token_throughput=per_s(in_tokens),
        output_token_throughput=per_s(out_tokens),
        total_token_throughput=per_s(in_tokens + out_tokens),
        goodput_rps=per_s(good),
        slo=verdict,
        accelerators=accelerators,
        usd_per_hour=price,
        cost_per_m_output_tokens=cost_per_million(price, per_s(out_tokens)),
        cost_per_m_total_tokens=cost_per_million(price, per_s(in_tokens + out_tokens)),
        output_lengths_forced=caps.forces_output_length,
        output_length_match=(sum(r.output_tokens == r.planned_output_tokens for r in sized)
                             / len(sized)) if sized else None,
        input_length_match=(sum(r.prompt_tokens == r.input_tokens + offset for r in prompted)
                            / len(prompted)) if prompted else None,
        mismatched=sum(r.mismatch is not None for r in recs),
        chat_template_tokens=caps.chat_template_tokens,
        dispatch_lag_ms=f.dist_ms([r.sent_ns - r.scheduled_ns for r in outcome.records
                                   if r.sent_ns]),
        server=outcome.server,
        error_samples=sorted({r.error for r in recs if r.error})[:5],
        client_cpu=outcome.client_cpu,
        loop_lag_p99_ms=outcome.loop_lag_p99_ms,
        client_saturated=outcome.client_saturated,
        offered_tokens_per_s=kept.offered_tokens_per_s if kept else None,
        delivered_tokens_per_s=kept.delivered_tokens_per_s if kept else None,
        own_prefix_share=outcome.own_prefix_share,
    )
