"""Every figure a study judges, searches on, logs and reports, declared once.

A :class:`Metric` says what a figure is called (its key: the SLO field of a workload, the
MLflow metric, the CSV column, the Pareto objective), its unit, which direction is better,
how one run's summary holds it (``read``: a field of a :class:`tuner.metrics.RunSummary`, or a
statistic of one of its latency distributions) and, for a latency, how one request is judged
against its bound. The SLO block of the workload file, the SLO verdict of a run, the goodput
count, the search's constraints, the trade-off front and its picks, the MLflow keys and
``trials.csv`` all iterate :data:`METRICS`: a new figure is one entry here (and its test).

The registry imports nothing of the package: the workload (which declares the SLO block) sits
below the metrics that compute the figures, and both read it. A request is seen through the
:class:`Timed` protocol, which the load generator's records satisfy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Better = Literal["lower", "higher"]


class Timed(Protocol):
    """What a latency reads of one request (the load generator's RequestRecord)."""

    @property
    def ok(self) -> bool: ...

    @property
    def ttft_ns(self) -> int | None: ...

    @property
    def e2e_ns(self) -> int | None: ...

    def itl_ns(self) -> Iterable[float]: ...

    def tpot_ns(self) -> float | None: ...


@dataclass(frozen=True)
class Latency:
    """A per-request latency whose distribution a run summary keeps as ``<name>_ms``."""

    name: str
    label: str
    values_ns: Callable[[Timed], Iterable[float]]
    """The values (ns) one request adds to the distribution; nothing for a failed request."""
    formula: str


LATENCIES: tuple[Latency, ...] = (
    Latency("ttft", "TTFT",
            lambda r: [r.ttft_ns] if r.ok and r.ttft_ns is not None else [],
            "first token-bearing chunk - send time, per successful request"),
    Latency("itl", "ITL", lambda r: r.itl_ns() if r.ok else [],
            "gap between consecutive token arrivals, pooled over successful requests (a "
            "chunk with k tokens after a gap g contributes k gaps of g/k)"),
    Latency("tpot", "TPOT", lambda r: [t] if (t := r.tpot_ns()) is not None else [],
            "(e2e - TTFT) / (output tokens - 1), per successful request with >= 2 tokens"),
    Latency("e2e", "E2E", lambda r: [r.e2e_ns] if r.ok and r.e2e_ns is not None else [],
            "completion time - send time, per successful request"),
)
LATENCY = {lat.name: lat for lat in LATENCIES}


@dataclass(frozen=True)
class SloBound:
    """How a metric is bounded in a workload's ``slo:`` block (a run passes when value <=
    bound)."""

    field: str
    """The key in the workload file (usually the metric's key)."""
    default: float | None | Literal["required"]
    description: str
    at_most: float | None = None
    """The largest bound allowed (a share is at most 1)."""
    zero_allowed: bool = False
    least_plausible: float | None = None
    """Bounds below this are faster than any engine serves (likely seconds written as ms)."""
    per_request: Callable[[Timed], float | None] | None = None
    """What one request is judged on for goodput (its value against the same bound)."""
    absent_passes: bool = False
    """A run (or request) without this value passes it: one-token outputs have no ITL."""
    constraint: str | None = None
    """The search's constraint that carries this bound's margin (None: the margin is not a
    constraint of its own; a run that fails it is infeasible all the same)."""
    relative: bool = True
    """The constraint is value / bound - 1 (else value - bound)."""


@dataclass(frozen=True)
class Metric:
    """One figure of a run at one load."""

    key: str
    label: str
    unit: str
    better: Better
    read: str
    """Where a run summary holds it: ``<latency>.<statistic>`` (``ttft.p95``) or a field."""
    slo: SloBound | None = None
    objective: bool = False
    """A Pareto objective of the trade-off front (when the run was judged on it) and a bound
    a ``--pick`` may tighten."""
    tracked: bool = True
    """Logged to MLflow with each trial's best step."""
    column: bool = True
    """A column of ``trials.csv``."""

    @property
    def latency(self) -> Latency | None:
        name, _, _ = self.read.partition(".")
        return LATENCY.get(name)

    def value(self, summary: Any) -> float | None:
        """The figure in a run summary (an object with ``<latency>_ms`` distributions)."""
        name, _, statistic = self.read.partition(".")
        if statistic:
            found = getattr(getattr(summary, f"{name}_ms"), statistic)
        else:
            found = getattr(summary, name)
        return None if found is None else float(found)

    def worst(self) -> float:
        return float("inf") if self.better == "lower" else float("-inf")


METRICS: tuple[Metric, ...] = (
    Metric("ttft_p95_ms", "p95 TTFT", "ms", "lower", "ttft.p95", objective=True,
           slo=SloBound("ttft_p95_ms", "required", "p95 time to first token",
                        least_plausible=10.0, per_request=lambda r: r.ttft_ns,
                        constraint="ttft")),
    Metric("itl_p95_ms", "p95 ITL", "ms", "lower", "itl.p95", objective=True,
           slo=SloBound("itl_p95_ms", "required", "p95 inter-token latency",
                        least_plausible=1.0, per_request=lambda r: r.tpot_ns(),
                        absent_passes=True, constraint="itl")),
    Metric("error_rate", "error rate", "share", "lower", "error_rate",
           slo=SloBound("max_error_rate", 0.01, "errors / measured requests", at_most=1.0,
                        zero_allowed=True, constraint="errors", relative=False)),
    Metric("e2e_p99_ms", "p99 E2E", "ms", "lower", "e2e.p99", objective=True,
           slo=SloBound("e2e_p99_ms", None, "p99 end-to-end latency", least_plausible=10.0,
                        per_request=lambda r: r.e2e_ns, absent_passes=True)),
    Metric("tpot_p95_ms", "p95 TPOT", "ms", "lower", "tpot.p95"),
    Metric("ttft_mean_ms", "mean TTFT", "ms", "lower", "ttft.mean"),
    Metric("itl_mean_ms", "mean ITL", "ms", "lower", "itl.mean"),
    Metric("request_throughput", "requests/s", "req/s", "higher", "request_throughput"),
    Metric("output_tokens_per_s", "output tokens/s", "tokens/s", "higher",
           "output_token_throughput"),
    Metric("total_tokens_per_s", "total tokens/s", "tokens/s", "higher",
           "total_token_throughput"),
    Metric("goodput_rps", "goodput", "req/s", "higher", "goodput_rps"),
    Metric("cost_per_m_total_tokens", "$/M total tokens", "USD", "lower",
           "cost_per_m_total_tokens"),
)
"""In the order SLO checks are listed and MLflow keys written."""

BY_KEY = {m.key: m for m in METRICS}
SLO_METRICS = tuple(m for m in METRICS if m.slo is not None)
OBJECTIVES = tuple(m for m in METRICS if m.objective)

TTFT_P95, ITL_P95, ERROR_RATE = BY_KEY["ttft_p95_ms"], BY_KEY["itl_p95_ms"], BY_KEY["error_rate"]
"""The figures code names on purpose: the SLO guard watches TTFT and errors while a step runs,
the live counters show TTFT and ITL."""


def slo_metric(field: str) -> Metric:
    """The metric a workload's ``slo.<field>`` bounds."""
    for m in SLO_METRICS:
        assert m.slo is not None
        if m.slo.field == field:
            return m
    raise KeyError(field)
