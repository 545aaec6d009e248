"""The user's current configuration (``tune --baseline``), with fakes at the launcher and
measurer seams: it is the study's second trial, runs its own knobs (those outside the search
space too), is re-measured beside the defaults whatever its rank, and gets a verdict of its
own: the best candidate against it, as against the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.fakes.launcher import FakeLauncher
from tests.unit.study.conftest import SMOKE, MakeContext, remeasure_here
from tests.unit.study.test_race import Scaled
from tuner.report import baseline_text
from tuner.study import NullTracker, StudyConfig, StudyProgress, TrialResult
from tuner.study.config import Baseline
from tuner.study.loop import run_search
from tuner.study.repeats.remeasure import pick_candidates
from tuner.study.trial import TrialContext, run_trial


def test_the_baseline_is_the_second_trial_and_runs_its_own_knobs(
        tmp_path: Path, make_ctx: MakeContext) -> None:
    launcher = FakeLauncher()
    ctx = make_ctx(launcher, Scaled({None: 1.0, 300: 0.8}, cv=0.0))
    cfg = StudyConfig(engine="vllm", workload=SMOKE, model="/m", trials=2, out_dir=tmp_path,
                      study_name="baseline",
                      baseline=Baseline(name="prod", knobs={"max_batch_size": 300}))
    state = StudyProgress()
    run_search(cfg, ctx, NullTracker(), state)
    first, second = sorted(state.results, key=lambda r: r.number)
    assert first.defaults
    assert first.baseline is None
    assert second.baseline == "prod"
    assert not second.defaults
    assert second.config == {"max_batch_size": 300}  # outside the space (4-256): run as given
    assert launcher.started[1].request.config == {"max_batch_size": 300}
    assert "(baseline prod)" in second.line()


def searched(make_ctx: MakeContext, factors: dict[int | None, float]
             ) -> tuple[TrialContext, list[TrialResult]]:
    ctx = make_ctx(FakeLauncher(), Scaled(factors, cv=0.02))
    results = [run_trial(ctx, 0, {}, defaults=True),
               run_trial(ctx, 1, {"max_batch_size": 32}, defaults=False).model_copy(
                   update={"baseline": "prod"}),
               run_trial(ctx, 2, {"max_batch_size": 64}, defaults=False),
               run_trial(ctx, 3, {"max_batch_size": 128}, defaults=False)]
    return ctx, results


def test_the_baseline_is_re_measured_whatever_its_rank(make_ctx: MakeContext) -> None:
    _, results = searched(make_ctx, {None: 1.0, 32: 0.7, 64: 1.3, 128: 1.2})
    picked = pick_candidates(results, top=1)
    assert [t.number for t in picked] == [0, 1, 2]


def test_the_best_candidate_gets_a_verdict_against_the_baseline(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    ctx, results = searched(make_ctx, {None: 1.0, 32: 0.7, 64: 1.3, 128: 1.2})
    out = remeasure_here(ctx, results, f"sqlite:///{tmp_path / 'r.db'}", top=1, repeats=3)
    assert out.baseline is not None
    assert out.baseline.trial == 1
    assert out.baseline_verdict == "win"
    assert out.against_baseline_trial == 2
    assert out.against_baseline is not None
    assert out.against_baseline.ratio == pytest.approx(1.3 / 0.7, rel=0.1)
    assert [v.trial for v in out.verdicts] == [1, 2]  # against the defaults
    assert out.study_verdict == "win"
    assert out.paired_trial == 2
    assert out.paired is not None
    assert out.paired.ratio == pytest.approx(1.3, rel=0.1)
    text = baseline_text("vLLM", out, results[1], results[2])
    assert text is not None
    assert text.startswith("tuned vLLM (trial 2) beats your current configuration (prod) by ")


def test_a_baseline_that_met_no_load_says_so() -> None:
    failed = TrialResult(number=1, config={"max_batch_size": 300}, defaults=False,
                         outcome="invalid_config", detail="engine refused --max-num-seqs",
                         baseline="prod")
    assert baseline_text("vLLM", None, failed, None) == (
        "your current configuration (prod, trial 1) met no load within the SLOs "
        "(invalid_config: engine refused --max-num-seqs)")
    assert baseline_text("vLLM", None, None, None) is None
