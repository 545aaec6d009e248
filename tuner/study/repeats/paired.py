"""Two configurations measured side by side: fresh starts alternating A B B A A B ..., each
of A's starts paired with the adjacent start of B, and the verdict of the pairs.

Drift over time (the machine warms, a neighbour comes and goes) moves both starts of a pair
alike, so their ratio cancels it; the verdict is the interval of A's advantage over the pairs
(:func:`tuner.metrics.paired_verdict`): B's cost per million output tokens over A's. A pair
counts only when both starts met the SLOs with a bracketed capacity: a start that met them at
no load has no cost, and one whose capacity is a lower bound has only a bound on it; such
pairs are named, never averaged in. The start-to-start spread is pooled over both
configurations' starts (one-way: within each configuration), which gives the interval twice
the degrees of freedom of the pairs alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.metrics import RatioVerdict, floored, paired_verdict, pooled_spread, step_floor
from tuner.study.outcome import TrialResult
from tuner.study.repeats.fresh_start import fresh_start
from tuner.study.repeats.remeasure import unresolved_step
from tuner.study.run_folder import measure_tag
from tuner.study.tracker import Tracker
from tuner.study.trial import TrialContext


@dataclass(frozen=True)
class Side:
    """One configuration of a comparison: its knobs (or the engine's defaults) and name."""

    name: str
    config: dict[str, Any]
    defaults: bool


def interleaved(pairs: int) -> list[int]:
    """Which side each start measures (0: A, 1: B): A B, B A, A B, ... a pair at a time."""
    return [side if k % 2 == 0 else 1 - side for k in range(pairs) for side in (0, 1)]


def measure_pairs(ctx: TrialContext, a: Side, b: Side, *, pairs: int, tracker: Tracker,
                  done: Sequence[TrialResult] = (),
                  keep: Callable[[list[TrialResult]], None] | None = None
                  ) -> list[TrialResult]:
    """``pairs`` pairs of fresh starts of ``a`` and ``b``, interleaved, numbered from 0 and
    tagged ``measure-NNN``; each is told to ``tracker``, shown as it ends and, with the starts
    before it, handed to ``keep``. ``done``: whole pairs an earlier run measured (a resumed
    measurement), counted among the ``pairs`` and not started again."""
    results = list(done)
    order = interleaved(pairs)
    for i in range(len(results), len(order)):
        side = (a, b)[order[i]]
        ctx.progress.status("repeat", f"start {i + 1} of {len(order)}: {side.name} "
                            f"(pair {i // 2 + 1})")
        result = fresh_start(ctx, i, side.config, defaults=side.defaults, tag=measure_tag(i))
        result.pair = i // 2 + 1
        results.append(result)
        tracker.log_trial(result)
        ctx.progress.note(f"{side.name}: " + result.line().replace("trial", "start", 1))
        if keep is not None:
            keep(results)
    return results


@dataclass(frozen=True)
class PairedOutcome:
    verdict: RatioVerdict | None
    left_out: list[str]
    """Pairs that could not count, each with why."""


def usable(r: TrialResult) -> bool:
    return r.feasible and not r.capacity_bound and r.cost_per_m_output_tokens is not None


def paired_outcome(results: list[TrialResult], resolution: float, *, looks: int = 1
                   ) -> PairedOutcome:
    """The verdict of the pairs of ``results`` (as :func:`measure_pairs` ordered them);
    ``looks``: the verdicts read on the way to this one, the last included (the level is
    shared over them, as a race's is)."""
    order = interleaved(len(results) // 2)
    logs: list[float] = []
    left_out: list[str] = []
    sides: tuple[list[float], list[float]] = ([], [])
    for k in range(len(results) // 2):
        pair = {order[2 * k + j]: results[2 * k + j] for j in (0, 1)}
        for side, r in pair.items():
            if usable(r) and r.max_load is not None:
                sides[side].append(r.max_load)
        bad = [r for r in pair.values() if not usable(r)]
        if bad:
            why = "; ".join(f"start {r.number + 1}: " + (
                "capacity only a lower bound" if r.feasible else r.outcome) for r in bad)
            left_out.append(f"pair {k + 1} ({why})")
            continue
        cost_a, cost_b = (pair[s].cost_per_m_output_tokens for s in (0, 1))
        assert cost_a is not None
        assert cost_b is not None
        logs.append(math.log(cost_b / cost_a))
    if not logs:
        return PairedOutcome(None, left_out)
    floor = results_floor(results)
    verdict = paired_verdict(logs, resolution, pooled=floored(pooled_spread(sides), floor),
                             floor_sd=floor, looks=looks)
    return PairedOutcome(verdict, left_out)


def results_floor(results: list[TrialResult]) -> float:
    """The least start-to-start SD the usable starts can show (``step_floor``): capacities
    that were not interpolated are known to their step only."""
    return step_floor([unresolved_step(r.capacity.estimate) if r.capacity is not None
                       and r.capacity.estimate is not None else None
                       for r in results if usable(r)])
