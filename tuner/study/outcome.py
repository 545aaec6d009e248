"""What one trial produced: its class, its score and its evidence."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from tuner.measurement import CapacityResult
from tuner.metrics import QualityVerdict, RunSummary, money

Outcome = Literal["ok", "oom", "invalid_config", "startup_timeout", "crashed",
                  "crashed_during_load", "hung", "probe_failed", "error", "slo_infeasible",
                  "quality_failed", "interrupted"]
"""``probe_failed``: the engine started but does not serve the workload (no such model, no
such route); ``hung``: its process lived but brought no token and did not answer its health
check for the workload's ``hang_timeout_s`` (it was killed); ``error``: anything else that
went wrong in the trial (its detail says what);
``quality_failed``: it met the SLOs, but it sets lossy knobs and its greedy answers agree
with the defaults' less than the workload's ``quality.min_token_agreement`` (or could not be
compared with them)."""
FAILED_OUTCOMES = ("oom", "invalid_config", "startup_timeout", "crashed", "crashed_during_load",
                   "hung", "probe_failed", "error")


class Timing(BaseModel):
    startup_s: float = 0.0
    warmup_s: float = 0.0
    """Warming the started engine until its latencies settled (not part of measure_s)."""
    measure_s: float = 0.0
    teardown_s: float = 0.0
    wall_s: float = 0.0

    def plus(self, other: Timing) -> Timing:
        """Both starts' seconds (a trial measured again on a fresh start)."""
        return Timing(**{k: getattr(self, k) + getattr(other, k) for k in Timing.model_fields})


class TrialResult(BaseModel):
    number: int
    config: dict[str, Any]
    defaults: bool
    outcome: Outcome
    detail: str = ""
    rejected_before_launch: bool = False
    broken_rules: list[str] = []
    cost_per_m_output_tokens: float | None = None
    max_load: float | None = None
    best: RunSummary | None = None
    capacity: CapacityResult | None = None
    command: str | None = None
    launch: dict[str, Any] = {}
    accelerators: int = 1
    log_path: str | None = None
    records_path: str | None = None
    log_tail: str | None = None
    timing: Timing = Timing()
    starts: int = Field(default=1, description="fresh engine starts this trial took")
    costs: list[float] = Field(default_factory=list, description="each start's cost, when "
                               "the trial was measured again (intensification)")
    quality: QualityVerdict | None = Field(default=None, description="the check of its lossy "
                                           "knobs against the defaults' answers, when made")
    pair: int | None = Field(default=None, description="in a paired comparison (tune measure "
                             "--against), the pair this fresh start belongs to, from 1")
    baseline: str | None = Field(default=None, description="the name of the user's current "
                                 "configuration (tune --baseline) when this trial measured it")
    health_lead_s: float | None = Field(default=None, description=(
        "how long the engine's health endpoint answered before it served (its last start)"))
    metric_families: int | None = Field(default=None, description=(
        "Prometheus metric families the engine exposed once ready (None: none, no endpoint)"))

    @property
    def feasible(self) -> bool:
        return self.outcome == "ok" and self.cost_per_m_output_tokens is not None

    @property
    def label(self) -> str:
        """`` (defaults)``, `` (baseline NAME)`` or nothing: what a trial's line adds to its
        number."""
        if self.defaults:
            return " (defaults)"
        return f" (baseline {self.baseline})" if self.baseline else ""

    @property
    def capacity_bound(self) -> bool:
        """The capacity is a lower bound: no load failed (nothing bracketed it from above),
        and its cost an upper bound."""
        found = self.capacity.estimate if self.capacity else None
        return self.max_load is not None and found is not None and found.high is None

    def load_text(self, fmt: str = "{:.3g}") -> str:
        """``11.2``, or ``≥ 24 (not bracketed)`` for a bound; ``-`` when none was found."""
        if self.max_load is None:
            return "-"
        value = fmt.format(self.max_load)
        return f"≥ {value} (not bracketed)" if self.capacity_bound else value

    def line(self) -> str:
        """One line for the terminal."""
        head = f"trial {self.number}{self.label}: {self.outcome}"
        if self.feasible:
            dear = "≤ " if self.capacity_bound else ""
            line = (f"{head}, {dear}{money(self.cost_per_m_output_tokens)}/M output tokens at "
                    f"load {self.load_text()}")
            found = self.capacity.estimate if self.capacity else None
            if found is not None and found.high is not None:
                line += f" (passed {found.low:.3g}, failed {found.high:.3g}"
                line += f"; binding: {found.binding})" if found.binding else ")"
            if len(self.costs) > 1:
                line += " (mean of 2 starts: " + ", ".join(money(c) for c in self.costs) + ")"
            if self.capacity is not None and self.capacity.stopped_by == "client_saturated":
                line += " or more: the load generator was saturated above it"
            return line
        return f"{head}: {self.detail}"[:200]


def ranked(results: list[TrialResult]) -> list[TrialResult]:
    """The trials that met the SLOs, cheapest first."""
    return sorted((r for r in results if r.feasible),
                  key=lambda r: r.cost_per_m_output_tokens or float("inf"))


def defaults_trial(results: list[TrialResult]) -> TrialResult | None:
    """The trial of the engine's defaults, whatever its outcome."""
    return next((r for r in results if r.defaults), None)


def baseline_trial(results: list[TrialResult]) -> TrialResult | None:
    """The trial of the user's current configuration (``tune --baseline``), if any."""
    return next((r for r in results if r.baseline), None)


def cheapest(results: list[TrialResult]) -> TrialResult | None:
    """The cheapest trial that met the SLOs (it may be the defaults)."""
    return next(iter(ranked(results)), None)


class MeasuredRun(BaseModel):
    """One fresh start of one candidate: its capacity search's best step and estimate."""

    engine: str
    trial: int
    defaults: bool
    repeat: int
    load: float = Field(description="the start's estimated capacity (0: no load met the SLOs)")
    usd_per_hour: float
    records_path: str | None = None
    summary: RunSummary | None = Field(default=None, description="the best passing step")
    failure: str | None = None
    step: int | None = Field(default=None, description=(
        "the best step's epoch in the records (None: every measured record counts)"))
    scale: float = Field(default=1.0, description=(
        "estimated capacity / the best step's load: its throughput scaled to the capacity"))
    binding: str | None = None
    output_tokens: list[int] | None = Field(default=None, description=(
        "each counted request's output tokens in the best step: with window_s, what the "
        "bootstrap needs, so a report rebuilds from this record without the records file"))
    window_s: float | None = None
    unresolved_step: float | None = Field(default=None, description=(
        "(lowest failing - highest passing load) / highest passing, when the capacity was "
        "not interpolated between them: it is only known to lie in that step (None: "
        "interpolated, or no load failed)"))
    bound: bool = Field(default=False, description="the capacity is a lower bound (no load "
                        "failed): the start cannot be paired")
