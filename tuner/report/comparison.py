"""Tuning delta versus engine delta, computed from measured runs only.

Inputs are each engine's trial results and the interleaved re-measurements of its defaults
and its tuned best (with their per-request records on disk). Tuning delta = defaults' cost /
tuned cost; engine delta = the other engine's cost / the best engine's cost (tuned against
tuned, defaults against defaults). Each ratio has a bootstrap interval over requests. The
engine delta's verdict is the paired one: each repeat's fresh starts of the two engines,
measured side by side, paired, with the start-to-start spread pooled over both
(:func:`~tuner.study.repeats.verdict_between`), decided at the workload's resolution in the
three sentences of every verdict (a win, within the resolution, unresolved); a winner is
called only when it is resolved.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from tuner.core import RESOLUTION
from tuner.metrics import Interval, RatioVerdict, ratio_interval
from tuner.report.study_report import paired_text, saved_text
from tuner.study import TrialResult
from tuner.study.repeats import (
    MeasuredRun,
    Remeasured,
    pick_winner,
    summarise_candidate,
    verdict_between,
)


class TrialPoint(BaseModel):
    engine: str
    number: int
    defaults: bool
    outcome: str
    cost: float | None
    ttft_p95_ms: float | None
    max_load: float | None


class CurvePoint(BaseModel):
    load: float
    passed: bool
    ttft_p95_ms: float | None
    itl_p95_ms: float | None
    output_tokens_per_s: float


class Operations(BaseModel):
    """What an operator lives with, read off the study's engine starts and the engine's spec."""

    starts: int = Field(description="starts that got ready and recorded these figures")
    startup_median_s: float | None = Field(description="start to ready (a completion served)")
    health_lead_max_s: float | None = Field(description=(
        "the longest its health endpoint answered 200 before it served (0: never before)"))
    metrics_endpoint: bool
    metric_families: int | None = Field(description="Prometheus metric families exposed")
    maintenance: str

    def cells(self) -> list[str]:
        """start-up, health before serving, metrics, status: as the report's table shows them."""
        if not self.starts:
            startup = health = "not recorded"
        else:
            startup = f"{self.startup_median_s:.1f} s (median of {self.starts})"
            lead = self.health_lead_max_s or 0.0
            health = f"yes: up to {lead:.1f} s before" if lead > 0 else "no"
        metrics = ("none (no endpoint)" if not self.metrics_endpoint
                   else "not read" if self.metric_families is None
                   else f"{self.metric_families} families")
        return [startup, health, metrics, self.maintenance]


def operations(results: list[TrialResult], *, maintenance: str, metrics_endpoint: bool
               ) -> Operations:
    """The operator's figures over a study's starts that got ready."""
    ready = [r for r in results if r.health_lead_s is not None and not r.rejected_before_launch]
    startups = [r.timing.startup_s / max(1, r.starts) for r in ready]
    families = [r.metric_families for r in ready if r.metric_families is not None]
    return Operations(
        starts=len(ready), startup_median_s=float(np.median(startups)) if startups else None,
        health_lead_max_s=max((r.health_lead_s or 0.0 for r in ready), default=None),
        metrics_endpoint=metrics_endpoint, metric_families=max(families) if families else None,
        maintenance=maintenance)


class EngineResult(BaseModel):
    engine: str
    display_name: str
    engine_version: str
    study_dir: str
    defaults: Remeasured | None
    tuned: Remeasured | None
    tuning_delta: Interval | None
    tuning_verdict: RatioVerdict | None = Field(default=None, description=(
        "the tuned configuration against the defaults, paired start by start (None: the "
        "tuned choice is the defaults, or no pair of starts met the SLOs)"))
    trials: list[TrialPoint]
    tuned_curve: list[CurvePoint]
    search_best: Remeasured | None = Field(default=None, description=(
        "the search's cheapest configuration when, re-measured, it lost to the defaults"))
    note: str = ""
    operations: Operations | None = None


class EngineDelta(BaseModel):
    kind: str  # "tuned" or "defaults"
    best: str
    other: str
    ratio: Interval
    winner_called: bool
    verdict: RatioVerdict | None = Field(default=None, description=(
        "the paired verdict of the fresh starts, the best engine's advantage (None: no pair "
        "of starts that both met the SLOs with a bracketed capacity)"))

    def sentence(self, names: dict[str, str]) -> str:
        """The delta in one line: the paired verdict's sentence, or without one the
        bootstrap interval's."""
        best, other = f"{names[self.best]} ({self.kind})", f"{names[self.other]} ({self.kind})"
        if self.verdict is not None:
            return self.verdict.sentence(best, other)
        r = self.ratio
        interval = f"{r.value:.2f}x ({r.low:.2f}-{r.high:.2f})"
        if self.winner_called:
            return f"{best} beat {other} by {interval}, over requests (no paired starts)"
        return f"{best} and {other} overlap ({interval}): no winner can be called"


class Comparison(BaseModel):
    workload: str
    slo_ttft_p95_ms: float
    engines: list[EngineResult]
    engine_deltas: list[EngineDelta]
    verdict: str
    runs: list[MeasuredRun]


def _points(engine: str, results: list[TrialResult]) -> list[TrialPoint]:
    return [TrialPoint(engine=engine, number=r.number, defaults=r.defaults, outcome=r.outcome,
                       cost=r.cost_per_m_output_tokens,
                       ttft_p95_ms=r.best.ttft_ms.p95 if r.best else None, max_load=r.max_load)
            for r in results if not r.rejected_before_launch]


def _curve(trial: TrialResult | None) -> list[CurvePoint]:
    if trial is None or trial.capacity is None:
        return []
    return [CurvePoint(load=s.load, passed=s.slo.passed, ttft_p95_ms=s.ttft_ms.p95,
                       itl_p95_ms=s.itl_ms.p95, output_tokens_per_s=s.output_token_throughput)
            for s in sorted(trial.capacity.steps, key=lambda s: s.load)]


def engine_result(engine: str, display: str, version: str, study_dir: str,
                  results: list[TrialResult], picked: dict[str, TrialResult],
                  runs: list[MeasuredRun], seed: int, ops: Operations | None = None,
                  resolution: float = RESOLUTION) -> tuple[EngineResult, dict[str, np.ndarray]]:
    samples: dict[str, np.ndarray] = {}
    measured: dict[str, Remeasured | None] = {"defaults": None, "tuned": None}
    done: dict[int, tuple[Remeasured, np.ndarray]] = {}  # tuned may be the defaults' trial
    for kind, trial in picked.items():
        if trial.number not in done:
            done[trial.number] = summarise_candidate(engine, trial, runs, seed)
        measured[kind], samples[kind] = done[trial.number]
    d, t = measured["defaults"], measured["tuned"]
    curve_of = picked.get("tuned")
    delta = None
    note = ""
    held = not_held(d, t) if d is not None and t is not None else []
    searched = None
    if d is not None and t is not None and t.trial != d.trial and pick_winner([d, t]) is d:
        # The search's best lost to the defaults on fresh starts: tuning recommends the
        # defaults, as a study's own re-measurement does (remeasure.pick_winner).
        searched, t, samples["tuned"], curve_of = t, d, samples["defaults"], picked["defaults"]
        note = lost_text(searched, d)
    if d is not None and t is not None and d.cost and t.cost:
        delta = ratio_interval(d.cost.value, samples["defaults"], t.cost.value, samples["tuned"])
    elif t is not None and d is None:
        note = "the defaults met no load within the SLOs"
    elif t is None:
        note = "no configuration met the SLOs"
    paired = None
    if d is not None and t is not None and t.trial != d.trial:
        paired = verdict_between(runs, (engine, t.trial), (engine, d.trial), resolution)
    note = "; ".join(x for x in (note, *held) if x)
    return EngineResult(engine=engine, display_name=display, engine_version=version,
                        study_dir=study_dir, defaults=d, tuned=t, tuning_delta=delta,
                        tuning_verdict=paired,
                        trials=_points(engine, results), tuned_curve=_curve(curve_of),
                        search_best=searched, note=note, operations=ops), samples


def lost_text(searched: Remeasured, defaults: Remeasured) -> str:
    """Why the tuned choice is the defaults although the search found a cheaper one."""
    if searched.cost is None or defaults.cost is None:
        return (f"the search's best (trial {searched.trial}) could not be measured on fresh "
                "starts: the defaults stay")
    costs = f"${searched.cost.text('{:.4g}')} against ${defaults.cost.text('{:.4g}')}"
    if searched.cost.value < defaults.cost.value:
        return (f"the search's best (trial {searched.trial}) was cheaper on fresh starts "
                f"({costs}) but did not meet the SLOs on all of them: the defaults stay")
    return (f"the search's best (trial {searched.trial}) cost more than the defaults on fresh "
            f"starts ({costs}): the defaults stay")


NOT_MET = "met the SLOs at no load"


def not_held(defaults: Remeasured, tuned: Remeasured) -> list[str]:
    """What the re-measurement found the search got wrong: a configuration that met its SLOs
    at no load on some of its fresh starts."""
    out = []
    for label, m in (("defaults", defaults), ("tuned", tuned)):
        if label == "tuned" and tuned.trial == defaults.trial:
            continue
        if m.runs and m.slo_passed_runs < m.runs:
            out.append(f"{label}: {NOT_MET} on {m.runs - m.slo_passed_runs} of {m.runs} fresh "
                       f"starts (the search found {m.load:.3g})")
    return out


def engine_deltas(results: list[EngineResult], samples: dict[str, dict[str, np.ndarray]],
                  runs: list[MeasuredRun] | None = None, resolution: float = RESOLUTION
                  ) -> list[EngineDelta]:
    out = []
    for kind in ("tuned", "defaults"):
        scored = [(r, getattr(r, kind)) for r in results
                  if getattr(r, kind) is not None and getattr(r, kind).cost is not None]
        if len(scored) < 2:
            continue
        scored.sort(key=lambda x: x[1].cost.value)
        best, best_m = scored[0]
        for other, other_m in scored[1:]:
            ratio = ratio_interval(other_m.cost.value, samples[other.engine][kind],
                                   best_m.cost.value, samples[best.engine][kind])
            verdict = verdict_between(runs or [], (best.engine, best_m.trial),
                                      (other.engine, other_m.trial), resolution,
                                      family=len(scored) - 1)
            # Without paired starts, a winner over requests only past the resolution: a
            # bootstrap over thousands of requests makes a 0.3% difference "sure".
            called = (verdict.kind == "better" if verdict is not None
                      else ratio.low > 1.0 + resolution)
            out.append(EngineDelta(kind=kind, best=best.engine, other=other.engine,
                                   ratio=ratio, winner_called=called, verdict=verdict))
    return out


def tuning_gained(r: EngineResult, resolution: float) -> bool:
    """Whether tuning ``r``'s engine resolved a gain: its paired verdict is a win, or without
    pairs the bootstrap over requests clears the resolution (thousands of requests make a
    0.3% difference "sure")."""
    if r.tuned is None or r.defaults is None or r.tuned.trial == r.defaults.trial:
        return False
    if r.tuning_verdict is not None:
        return r.tuning_verdict.kind == "better"
    return r.tuning_delta is not None and r.tuning_delta.low > 1.0 + resolution


def tuning_text(r: EngineResult) -> str:
    """What tuning ``r``'s engine gained, as its paired verdict says it (the bootstrap over
    requests only when no pair of starts exists)."""
    v = r.tuning_verdict
    if v is None:
        assert r.tuning_delta is not None
        return saved_text(r.display_name, r.tuning_delta) + ", over requests (no paired starts)"
    trial = r.tuned.trial if r.tuned is not None else None
    kind = {"better": "win", "worse": "no_gain", "equivalent": "no_gain"}.get(v.kind, "open")
    return paired_text(r.display_name, v, trial, kind, rerun="rerun with more --repeats")


def _tuning_ratio(r: EngineResult) -> float:
    if r.tuning_verdict is not None:
        return r.tuning_verdict.ratio
    return r.tuning_delta.value if r.tuning_delta is not None else 0.0


def comparison_verdict(results: list[EngineResult], deltas: list[EngineDelta],
                       resolution: float = RESOLUTION) -> str:
    names = {r.engine: r.display_name for r in results}
    tuned = [r for r in results if r.tuning_delta is not None]
    parts = []
    biggest = max(tuned, key=_tuning_ratio, default=None)
    if biggest is not None:
        if biggest.tuned is not None and biggest.defaults is not None and (
                biggest.tuned.trial == biggest.defaults.trial):
            parts.append("tuning found nothing cheaper than the defaults of "
                         + " or ".join(r.display_name for r in tuned))
        else:
            parts.append(tuning_text(biggest))
    top = next((x for x in deltas if x.kind == "tuned"), None)
    if top is not None:
        parts.append(top.sentence(names))
    unheld = [r.display_name for r in results
              if any(m is not None and m.slo_passed_runs < m.runs for m in (r.defaults, r.tuned))]
    caveat = (f" (but {' and '.join(unheld)} {NOT_MET} on some fresh starts: see the "
              "notes)") if unheld else ""
    if biggest is not None and top is not None:
        gained = tuning_gained(biggest, resolution)
        switched = top.verdict.ratio if top.verdict is not None else top.ratio.value
        if not gained and not top.winner_called:
            advice = "neither tuning nor switching engines resolved a gain here"
        elif not top.winner_called or (gained and _tuning_ratio(biggest) >= switched):
            advice = "tune before you switch"
        else:
            advice = "switching engines pays more than tuning"
        return "; ".join(parts) + f": {advice}{caveat}"
    return ("; ".join(parts) + caveat) if parts else "no engine met the SLOs on this workload"
