"""Trial results made up for unit tests of what reads them (fronts, picks, spend, exports)."""

from __future__ import annotations

from typing import Any

from tests.unit.fakes.summaries import fake_summary
from tuner.metrics import Dist
from tuner.study import Timing, TrialResult


def dist(p95: float | None) -> Dist:
    return Dist(count=100, mean=p95, p50=p95, p90=p95, p95=p95, p99=p95, max=p95)


def trial(number: int, cost: float | None, ttft: float = 100.0, itl: float | None = 20.0, *,
          config: dict[str, Any] | None = None, defaults: bool = False,
          accelerators: int = 1, engine_s: float = 0.0, starts: int = 1,
          rejected: bool = False) -> TrialResult:
    """A trial that met the SLOs at ``cost`` (None: one that did not), with the p95s of its
    best step; ``engine_s`` seconds of engine time, split into start-up and measurement."""
    timing = Timing(startup_s=engine_s / 4, measure_s=engine_s * 3 / 4, wall_s=engine_s + 1)
    if cost is None:
        return TrialResult(number=number, config=config or {}, defaults=defaults,
                           outcome="invalid_config" if rejected else "slo_infeasible",
                           rejected_before_launch=rejected, accelerators=accelerators,
                           timing=timing if not rejected else Timing(wall_s=0.01),
                           starts=starts)
    best = fake_summary(1.0, True).model_copy(update={"ttft_ms": dist(ttft),
                                                      "itl_ms": dist(itl)})
    return TrialResult(number=number, config=config or {"max_batch_size": number},
                       defaults=defaults, outcome="ok", cost_per_m_output_tokens=cost,
                       max_load=2.0, best=best, accelerators=accelerators, timing=timing,
                       starts=starts)
