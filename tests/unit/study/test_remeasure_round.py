"""The re-measurement as units of work in the study's storage (SQLite here), with fakes at the
launcher and measurer seams: the units of a round are claimed once each, by any number of
workers; a worker's interrupted or dead unit is run again by another; the outcome assembled
from the stored units has the figures the records files give; the summary unit is taken
once. (PostgreSQL, an MLflow server and worker processes: tests/integration/
test_distributed.py.)"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer, records
from tests.unit.study.conftest import SMOKE, MakeContext, remeasure_here
from tuner.launch import EngineHandle
from tuner.loadgen import RequestRecord
from tuner.measurement import CapacityResult
from tuner.study import loop as study_module
from tuner.study.config import StudyConfig
from tuner.study.coordination import shared_study
from tuner.study.coordination.shared_study import Heartbeat, storage_for
from tuner.study.loop import run_search
from tuner.study.outcome import Timing, TrialResult
from tuner.study.repeats import remeasure_loop
from tuner.study.repeats.remeasure import outcome_of, tokens_from_records
from tuner.study.repeats.remeasure_loop import Remeasurement, remeasure_study, take_units
from tuner.study.repeats.remeasure_round import (
    LOST,
    UNIT,
    assemble,
    next_unit,
    open_round,
    plan_for,
    plan_of,
    round_status,
    take_summary,
)
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker
from tuner.study.trial import TrialContext, run_trial

CONFIG = {"max_batch_size": 64, "chunked_prefill": True}


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(study_module, "POLL_S", 0.1)
    monkeypatch.setattr(remeasure_loop, "POLL_S", 0.1)


class Varied(FakeMeasurer):
    """Each start returns its own output lengths (so costs have a spread), and holds its
    engine ``hold_s`` seconds (so that workers overlap)."""

    def __init__(self, hold_s: float = 0.0, seed: int = 0) -> None:
        super().__init__()
        self.hold_s, self.rng = hold_s, np.random.default_rng(seed)

    def capacity(self, handle: EngineHandle, accelerators: int
                 ) -> tuple[CapacityResult, list[RequestRecord]]:
        found, _ = super().capacity(handle, accelerators)
        threading.Event().wait(self.hold_s)
        lengths = self.rng.integers(5, 40, size=12)
        recs = [r for n in lengths for r in records(1, int(n))]
        for i, r in enumerate(recs):
            shift = i * 10**8
            r.index, r.scheduled_ns, r.sent_ns = i, r.sent_ns + shift, r.sent_ns + shift
            r.first_token_ns = (r.first_token_ns or 0) + shift
            r.done_ns = (r.done_ns or 0) + shift
        return found, recs


def searched(ctx: TrialContext) -> list[TrialResult]:
    """A finished search of three trials, the first the defaults."""
    return [run_trial(ctx, n, {**CONFIG, "max_batch_size": 16 * (n + 1)}, defaults=n == 0)
            for n in range(3)]


def round_in(url: str, ctx: TrialContext, results: list[TrialResult], *, top: int = 1,
             repeats: int = 2) -> optuna.Study:
    return open_round(storage_for(url, 1), "study.remeasure",
                      lambda: plan_for(ctx.spec.name, results, top=top, repeats=repeats,
                                       seed=0, usd_per_hour=ctx.workload.cost.usd_per_hour_for))


def remeasure_tags(launcher: FakeLauncher) -> list[str]:
    return [h.request.log_path.stem for h in launcher.started
            if h.request.log_path.stem.startswith("remeasure")]


def test_one_process_gets_the_figures_its_records_files_give(make_ctx: MakeContext,
                                                             tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), Varied())
    results = searched(ctx)
    out = remeasure_here(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=2, repeats=2)
    picked = [c.trial for c in out.candidates]
    assert [(r.trial, r.repeat) for r in out.runs] == [(t, rep) for rep in range(2)
                                                       for t in picked]  # interleaved
    from_files = outcome_of(ctx.spec.name, [next(r for r in results if r.number == t)
                                            for t in picked],
                            out.runs, 0, Timing(), tokens_from_records)
    assert [c.cost for c in out.candidates] == [c.cost for c in from_files.candidates]
    assert out.tuning_delta == from_files.tuning_delta
    assert out.candidates[0].cost is not None
    assert out.candidates[0].cost.low < out.candidates[0].cost.high  # a real spread


def test_two_workers_take_each_unit_once_and_see_one_outcome(make_ctx: MakeContext,
                                                             tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    results = searched(make_ctx())
    storage_for(url, 1)  # the tables exist before the race
    launchers = [FakeLauncher(), FakeLauncher()]
    done: list[Remeasurement] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def worker(i: int) -> None:
        try:
            ctx = make_ctx(launchers[i], Varied(hold_s=0.2, seed=i))
            barrier.wait()
            round_ = round_in(url, ctx, results, top=2, repeats=2)
            done.append(Remeasurement(assemble(round_, take_units(ctx, round_, 1.0, 0.1)),
                                      round_, 1.0))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    tags = remeasure_tags(launchers[0]) + remeasure_tags(launchers[1])
    assert sorted(tags) == sorted(f"remeasure-{n:03d}-{rep}" for n in (0, 1, 2)
                                  for rep in range(2))  # every unit, once
    assert all(remeasure_tags(launcher) for launcher in launchers), "one worker took them all"
    first, second = done
    assert first.outcome.candidates == second.outcome.candidates  # the same from anywhere
    assert first.outcome.runs == second.outcome.runs
    turns = []
    for finished in done:
        with finished.summary_turn() as ours:
            turns.append(ours)
    assert sorted(turns) == [False, True]  # one process records the study's summary


def test_an_interrupted_unit_is_queued_again_and_another_worker_runs_it(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    results = searched(make_ctx())

    class Interrupted(FakeMeasurer):
        def capacity(self, handle: EngineHandle, accelerators: int
                     ) -> tuple[CapacityResult, list[RequestRecord]]:
            raise KeyboardInterrupt("signal 15")

    stopped = FakeLauncher()
    ctx = make_ctx(stopped, Interrupted())
    round_ = round_in(url, ctx, results)
    with pytest.raises(KeyboardInterrupt):
        take_units(ctx, round_, 1.0, 0.1)
    assert stopped.running == set()
    first = round_.get_trials(states=(TrialState.FAIL,))
    assert [t.user_attrs[UNIT] for t in first] == [{"candidate": 0, "repeat": 0}]
    assert not round_.get_trials(states=(TrialState.RUNNING,))
    other = FakeLauncher()
    take_units(make_ctx(other, Varied()), round_, 1.0, 0.1)
    assert remeasure_tags(other)[-1] == f"remeasure-{plan_of(round_).candidates[0].number:03d}-0"
    out = assemble(round_)
    assert len(out.runs) == 4
    assert not any(r.failure for r in out.runs)


@pytest.mark.slow
def test_a_dead_workers_unit_is_failed_by_its_heartbeat_and_retried(
        make_ctx: MakeContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Stale after more than 2 s of silence by SQLite's clock, which counts whole seconds: a
    # beat 1.01 s old can read as 2 s, so the survivor beats every 0.2 s (with 1 s beats and
    # a 1 s grace, its own live unit was once failed and run twice).
    monkeypatch.setattr(shared_study, "GRACE_BEATS", 2)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    ctx = make_ctx(FakeLauncher(), Varied())
    round_ = round_in(url, ctx, searched(ctx))
    taken = next_unit(round_)  # a worker takes the first unit, beats once and dies
    assert taken is not None
    dead, unit = taken
    Heartbeat(round_, dead, 3600).stop()
    survivor = FakeLauncher()
    take_units(make_ctx(survivor, Varied()), round_, 0.2, 0.1)  # waits for it, then runs it
    states = {t.number: t for t in round_.get_trials()}
    assert states[dead.number].state == TrialState.FAIL
    retried = [t for t in states.values() if t.system_attrs.get("failed_trial") == dead.number]
    assert len(retried) == 1
    assert retried[0].state == TrialState.COMPLETE
    assert retried[0].user_attrs[UNIT] == {"candidate": unit.candidate, "repeat": unit.repeat}
    assert len(remeasure_tags(survivor)) == 4  # its three, and the dead worker's
    assert not any(r.failure for r in assemble(round_).runs)


def test_a_unit_no_worker_finished_is_a_failed_run(make_ctx: MakeContext,
                                                   tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    ctx = make_ctx(FakeLauncher(), Varied())
    round_ = round_in(url, ctx, searched(ctx))
    taken = next_unit(round_)
    assert taken is not None
    lost, _ = taken
    assert take_summary(round_) is None  # not while a unit is open
    status = round_status(round_, now=datetime.now())
    assert (status.units, status.done, status.waiting, len(status.running)) == (4, 0, 3, 1)
    round_.tell(lost, state=TrialState.FAIL)  # lost, its retries too
    take_units(ctx, round_, 1.0, 0.1)
    out = assemble(round_)
    assert [r.failure for r in out.runs] == [LOST, None, None, None]
    status = round_status(round_, now=datetime.now())
    assert (status.done, status.lost) == (3, 1)
    assert status.outcome is not None
    assert any(line.startswith("re-measured best: trial") for line in status.lines())
    assert take_summary(round_) is not None
    assert take_summary(round_) is None  # taken once


@pytest.mark.slow
def test_every_host_re_measures_after_the_search_and_a_rerun_starts_nothing(
        tmp_path: Path, make_ctx: MakeContext) -> None:
    db = tmp_path / "study.db"
    launchers = [FakeLauncher(), FakeLauncher()]
    states = [StudyProgress(), StudyProgress()]
    done: list[Remeasurement | None] = [None, None]
    errors: list[BaseException] = []

    def cfg(i: int) -> StudyConfig:
        return StudyConfig.model_validate(dict(
            engine="vllm", workload=SMOKE, model="/m", out_dir=tmp_path / f"h{i}",
            study_name="shared", storage=f"sqlite:///{db}", heartbeat_s=1, trials=3,
            remeasure_top=1, remeasure_repeats=2, tracking_uri="http://mlflow.invalid"))

    def host(i: int) -> None:
        try:
            ctx = make_ctx(launchers[i], Varied(hold_s=0.1, seed=i))
            study = run_search(cfg(i), ctx, NullTracker(), states[i])
            done[i] = remeasure_study(cfg(i), ctx, study, states[i])
        except BaseException as exc:
            errors.append(exc)

    storage_for(f"sqlite:///{db}", 1)
    threads = [threading.Thread(target=host, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    tags = remeasure_tags(launchers[0]) + remeasure_tags(launchers[1])
    assert len(tags) == len(set(tags)) == 4  # the defaults and the best, twice each
    outcomes = [d.outcome for d in done if d is not None]
    assert len(outcomes) == 2
    assert outcomes[0].candidates == outcomes[1].candidates
    first, second = ({r.number for r in s.results} for s in states)
    assert first == second  # every host has every trial, whoever ran it
    assert len([r for r in states[0].results if not r.rejected_before_launch]) == 3
    again = FakeLauncher()
    ctx = make_ctx(again, Varied())
    rerun = StudyProgress()
    study = run_search(cfg(0), ctx, NullTracker(), rerun)
    found = remeasure_study(cfg(0), ctx, study, rerun)
    assert again.started == []  # the finished round is the study's
    assert found is not None
    assert found.outcome.candidates == outcomes[0].candidates
