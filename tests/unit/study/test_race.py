"""The race after the search (``tune --race N``): with fakes at the launcher and measurer seams
and a round in SQLite, a leader is measured a repeat at a time beside the defaults until its
verdict against them is decided, a candidate decided worse drops out at once, the race ends at
its repeats, and a race interrupted half-way resumes where it stopped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer, records, summary
from tests.unit.study.conftest import MakeContext
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult, estimate
from tuner.study.coordination.shared_study import storage_for
from tuner.study.outcome import TrialResult
from tuner.study.repeats import remeasure_loop
from tuner.study.repeats.remeasure import RemeasureOutcome
from tuner.study.repeats.remeasure_loop import take_units
from tuner.study.repeats.remeasure_round import assemble, open_round, plan_for
from tuner.study.trial import TrialContext, run_trial


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remeasure_loop, "POLL_S", 0.1)


class Scaled(FakeMeasurer):
    """Capacity 2 req/s times the factor of the configuration's max_batch_size (the defaults:
    1), times a start-to-start noise of ``cv``; ``stop_at``: the start that is interrupted."""

    def __init__(self, factors: dict[int | None, float], cv: float = 0.03, seed: int = 0,
                 stop_at: int | None = None) -> None:
        super().__init__()
        self.factors, self.cv, self.stop_at = factors, cv, stop_at
        self.rng = np.random.default_rng(seed)
        self.starts = 0

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        self.starts += 1
        if self.starts == self.stop_at:
            raise KeyboardInterrupt("stopped mid-race")
        load = 2.0 * self.factors[handle.request.config.get("max_batch_size")]
        load *= float(np.exp(self.rng.normal(0, self.cv)))
        best, fail = summary(load, passed=True), summary(load * 1.02, passed=False)
        return CapacityResult(steps=[best, fail], best=best, lowest_failing_load=load * 1.02,
                              stopped_by="resolved",
                              estimate=estimate([best, fail], best, load * 1.02)), records()


def searched(ctx: TrialContext, batches: list[int]) -> list[TrialResult]:
    """The defaults (trial 0) and one trial per max_batch_size in ``batches``."""
    return [run_trial(ctx, 0, {}, defaults=True)] + [
        run_trial(ctx, n + 1, {"max_batch_size": b}, defaults=False)
        for n, b in enumerate(batches)]


def race(ctx: TrialContext, results: list[TrialResult], url: str, *, top: int,
         race_to: int) -> tuple[RemeasureOutcome, optuna.Study]:
    round_ = open_round(storage_for(url, 1), "study.remeasure",
                        lambda: plan_for(ctx.spec.name, results, top=top, repeats=2, seed=0,
                                         usd_per_hour=ctx.workload.cost.usd_per_hour_for,
                                         max_repeats=race_to))
    return assemble(round_, take_units(ctx, round_, beat_s=1.0, poll_s=0.1)), round_


def starts_of(out: RemeasureOutcome, trial: int) -> int:
    return len([r for r in out.runs if r.trial == trial])


def test_a_leader_is_raced_until_its_win_is_decided(make_ctx: MakeContext,
                                                    tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), Scaled({None: 1.0, 64: 1.15}))
    results = searched(ctx, [64])
    out, _ = race(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=1, race_to=8)
    assert out.study_verdict == "win"
    assert out.paired is not None
    assert out.paired.low is not None
    assert out.paired.low > 1.05
    assert 2 < starts_of(out, 1) < 8  # raced past the two repeats, stopped once decided
    assert starts_of(out, 0) == starts_of(out, 1)  # the defaults beside it, every repeat


def test_a_candidate_decided_worse_drops_out_and_the_race_ends_at_its_repeats(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), Scaled({None: 1.0, 64: 1.02, 8: 0.4}, cv=0.05, seed=3))
    results = searched(ctx, [64, 8])
    out, _ = race(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=2, race_to=4)
    slow = next(v for v in out.verdicts if v.trial == 2)
    assert slow.verdict.kind == "worse"
    assert starts_of(out, 2) == 2  # decided after the two repeats: never raced
    assert starts_of(out, 1) <= 4
    assert starts_of(out, 0) == starts_of(out, 1)
    assert out.study_verdict != "win"


def test_no_race_measures_the_repeats_only(make_ctx: MakeContext, tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), Scaled({None: 1.0, 64: 1.02}, cv=0.05))
    results = searched(ctx, [64])
    out, _ = race(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=1, race_to=2)
    assert [starts_of(out, t) for t in (0, 1)] == [2, 2]


def test_an_interrupted_race_resumes_with_what_it_measured(make_ctx: MakeContext,
                                                           tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    measurer = Scaled({None: 1.0, 64: 1.15}, stop_at=5)  # the race's first start
    ctx = make_ctx(FakeLauncher(), measurer)
    results = searched(ctx, [64])
    measurer.starts = 0
    with pytest.raises(KeyboardInterrupt):
        race(ctx, results, url, top=1, race_to=8)
    before = measurer.starts
    out, round_ = race(ctx, results, url, top=1, race_to=8)
    measured = [(r.trial, r.repeat) for r in out.runs]
    assert len(measured) > 4  # the race went on where it stopped
    assert len(measured) == len(set(measured))  # none run twice, none lost
    assert all(r.failure is None for r in out.runs)
    assert measurer.starts - before == len(measured) - (before - 1)
    assert out.study_verdict == "win"
