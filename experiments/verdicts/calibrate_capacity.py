"""Calibration of the capacity interval on a simulated engine with a known capacity.

Each run: a fresh start of tests/unit/fakes/queueing_engine.QueueingEngine (its service rate
drawn with start-to-start noise), searched by tuner.measurement.curve_search from a start load
(drawn between 0.2x and 1.5x the engine's mean service rate) to ``--resolution``; the run's
95% interval is checked against that start's true capacity (the load whose true p95 TTFT
meets the bound). Prints the coverage with its Clopper-Pearson interval, the half-widths and
the steps spent, and the runs that missed.

    PYTHONPATH=. .venv/bin/python experiments/verdicts/calibrate_capacity.py --runs 400
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import time

import numpy as np
from scipy.stats import beta

from tests.unit.fakes.queueing_engine import QueueingEngine
from tuner.measurement import Probe, SearchBudget, search_capacity
from tuner.metric_registry import ERROR_RATE, ITL_P95, TTFT_P95


def one_run(seed: int, engine: QueueingEngine, ttft_bound: float, itl_bound: float,
            budget: SearchBudget) -> tuple[float, object]:
    rng = np.random.default_rng(seed)
    start = engine.start(rng)
    first = engine.service_rate * rng.uniform(0.2, 1.5)

    async def step(load: float, index: int) -> Probe:
        return Probe(start.step(load, rng, index=index))

    bounds = {TTFT_P95: ttft_bound, ITL_P95: itl_bound, ERROR_RATE: 0.01}
    found = asyncio.run(search_capacity(step, first, bounds, budget, seed=seed))
    return start.capacity(ttft_bound, itl_bound), found


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=400)
    p.add_argument("--resolution", type=float, default=0.05)
    p.add_argument("--max-steps", type=int, default=12)
    p.add_argument("--ttft-bound", type=float, default=500.0)
    p.add_argument("--itl-bound", type=float, default=60.0)
    p.add_argument("--replicates", type=int, default=400)
    a = p.parse_args()
    engine = QueueingEngine()
    budget = SearchBudget(resolution=a.resolution, max_steps=a.max_steps,
                          replicates=a.replicates)
    t0 = time.monotonic()
    covered, widths, steps, unbracketed, misses = 0, [], [], 0, []
    for seed in range(a.runs):
        true, found = one_run(seed, engine, a.ttft_bound, a.itl_bound, budget)
        ci = found.interval  # type: ignore[attr-defined]
        steps.append(len(found.loads))  # type: ignore[attr-defined]
        if not ci.bracketed:
            unbracketed += 1
            misses.append((seed, true, ci.text()))
            continue
        widths.append(ci.half_width())
        if ci.low <= true <= ci.high:
            covered += 1
        else:
            misses.append((seed, true, ci.text()))
    n = a.runs
    lo = beta.ppf(0.025, covered, n - covered + 1) if covered else 0.0
    hi = beta.ppf(0.975, covered + 1, n - covered) if covered < n else 1.0
    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}; {time.monotonic() - t0:.0f} s")
    print(f"engine: {engine}")
    print(f"bounds: p95 TTFT {a.ttft_bound} ms, p95 ITL {a.itl_bound} ms; resolution "
          f"{a.resolution:.0%}, at most {a.max_steps} steps, {a.replicates} replicates")
    print(f"coverage of the true capacity: {covered}/{n} = {covered / n:.1%} "
          f"(95% CI {lo:.1%}-{hi:.1%}); not bracketed: {unbracketed}")
    w = np.array(widths)
    print(f"half-width: median {np.median(w):.1%}, p90 {np.percentile(w, 90):.1%}, "
          f"max {w.max():.1%}; within the resolution in {np.mean(w <= a.resolution):.0%}")
    s = np.array(steps)
    print(f"steps: median {np.median(s):.0f}, mean {s.mean():.1f}, max {s.max()}")
    for seed, true, text in misses[:15]:
        print(f"  miss: seed {seed}, true {true:.3g}, interval {text}")


if __name__ == "__main__":
    main()
