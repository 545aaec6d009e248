"""A configuration started again on a fresh engine and measured: the one way ``tune measure``,
intensification's second start, the end-of-study re-measurement and ``tune compare`` (through
the re-measurement) start a configuration they already know.

A fresh start is a whole trial (:func:`tuner.study.trial.run_trial`: start, readiness, warm-up,
capacity search, interpolated capacity and its cost) under a tag of its own, one of
:mod:`tuner.study.run_folder`'s (``trial-NNN-again``, ``remeasure-NNN-R``, ``measure-NNN``),
so its log and records sit beside the search's first start instead of over them. It is not
checked by the quality guard: the search's first start of a configuration is the one that is.
A failed start is the result's ``outcome``, never raised; only an interrupt (or a full disk,
which stops the study) propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tuner.loadgen import RequestRecord
from tuner.study.outcome import TrialResult
from tuner.study.run_folder import measure_tag
from tuner.study.tracker import Tracker
from tuner.study.trial import TrialContext, run_trial


def fresh_start(ctx: TrialContext, number: int, config: dict[str, Any], *, defaults: bool,
                tag: str, records_out: list[RequestRecord] | None = None) -> TrialResult:
    """Measure ``config`` (or the engine's defaults) once more on a fresh engine start, as
    trial ``number``; ``tag`` (RunFolder's) names its log and records; ``records_out``
    receives its per-request records as measured."""
    return run_trial(ctx, number, config, defaults=defaults, tag=tag, records_out=records_out)


def measure_repeats(ctx: TrialContext, config: dict[str, Any], *, defaults: bool,
                    repeats: int, tracker: Tracker, done: Sequence[TrialResult] = (),
                    keep: Callable[[list[TrialResult]], None] | None = None
                    ) -> list[TrialResult]:
    """``tune measure``: ``config`` (or the engine's defaults) on ``repeats`` fresh starts, one
    after another, numbered from 0 and tagged ``measure-NNN``; each is told to ``tracker``,
    shown as it ends and, with the starts before it, handed to ``keep``. The spread across
    them is the measurement's noise. ``done``: starts an earlier run measured (a resumed
    measurement), counted among the ``repeats`` and not started again."""
    results = list(done)
    for rep in range(len(results), repeats):
        ctx.progress.status("repeat", f"{rep + 1} of {repeats}")
        result = fresh_start(ctx, rep, config, defaults=defaults, tag=measure_tag(rep))
        results.append(result)
        tracker.log_trial(result)
        ctx.progress.note(result.line().replace("trial", "start", 1))
        if keep is not None:
            keep(results)
    return results
