"""The quality guardrail at its seams: the real ``run_trial`` and study loop, the real guard
and a real (in-memory or SQLite) Optuna storage, on the fake launcher and measurer, whose
greedy answers diverge for chosen knob values. The defaults record the reference once; a
lossy configuration that met the SLOs is checked on its own running engine before it stops;
below the least agreement, or with nothing to compare with, it is ``quality_failed`` and told
to Optuna as infeasible by how far it fell short."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from tests.unit.fakes.launcher import FakeLauncher, FakeMeasurer
from tests.unit.study.conftest import SMOKE, MakeContext
from tuner.study.config import StudyConfig
from tuner.study.loop import run_search
from tuner.study.quality_guard import REFERENCE_ATTR, QualityGuard
from tuner.study.state import StudyProgress
from tuner.study.tracker import NullTracker
from tuner.study.trial import TrialContext, constraint_values, run_trial
from tuner.workload import QualityCheck, Slo

Q4 = {"quantization": "Q4_0", "max_batched_tokens": 512, "micro_batch_size": 256,
      "flash_attn": False, "max_model_len": 2048, "max_batch_size": 1, "kv_cache_dtype": "f16"}


def guarded(ctx: TrialContext, study: optuna.Study, tmp_path: Path,
            least: float = 0.95) -> QualityGuard:
    return QualityGuard(QualityCheck(min_token_agreement=least, max_tokens=16), ctx.spec,
                        ctx.hardware.device, study, tmp_path / "quality", poll_s=0.01)


def test_the_defaults_record_the_reference_and_a_diverging_lossy_config_fails(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    launcher, measurer = FakeLauncher(), FakeMeasurer(diverge={"Q4_0": 4})
    ctx = make_ctx(launcher, measurer, engine="llamacpp")
    study = optuna.create_study()
    guard = guarded(ctx, study, tmp_path)
    base = run_trial(ctx, 0, {}, defaults=True, guard=guard)
    assert base.outcome == "ok"
    assert base.quality is None
    assert study.user_attrs[REFERENCE_ATTR]["trial"] == 0
    lossy = run_trial(ctx, 1, Q4, defaults=False, guard=guard)
    assert lossy.outcome == "quality_failed"
    assert lossy.quality is not None
    assert lossy.quality.lossy == {"quantization": "Q4_0"}
    assert lossy.quality.agreement is not None
    assert lossy.quality.agreement.token_agreement == 4 / 16
    assert lossy.quality.reference_trial == 0
    assert "token agreement 0.250" in lossy.detail
    # measured, so its cost is known, but it cannot win
    assert lossy.cost_per_m_output_tokens is not None
    assert not lossy.feasible
    # checked on its own engine, before it was stopped
    assert measurer.greedy_calls == ["trial-000", "trial-001"]
    assert [h.stops for h in launcher.started] == [1, 1]
    c = constraint_values(lossy, Slo(ttft_p95_ms=1000.0, itl_p95_ms=200.0))
    assert c["launch"] == 0.95 - 0.25
    assert (tmp_path / "quality" / "reference.json").is_file()
    assert "answers" in (tmp_path / "quality" / "trial-001.json").read_text()


def test_a_lossy_config_that_agrees_wins_and_a_lossless_one_is_not_checked(
        make_ctx: MakeContext, tmp_path: Path) -> None:
    measurer = FakeMeasurer(diverge={"Q4_0": 15})
    ctx = make_ctx(FakeLauncher(), measurer, engine="llamacpp")
    study = optuna.create_study()
    guard = guarded(ctx, study, tmp_path, least=0.9)
    run_trial(ctx, 0, {}, defaults=True, guard=guard)
    close = run_trial(ctx, 1, Q4, defaults=False, guard=guard)
    assert close.outcome == "ok"
    assert close.quality is not None
    assert close.quality.passed
    lossless = run_trial(ctx, 2, {"quantization": "F16", "max_batched_tokens": 1024},
                         defaults=False, guard=guard)
    assert lossless.outcome == "ok"
    assert lossless.quality is None
    assert measurer.greedy_calls == ["trial-000", "trial-001"]  # the reference was there


def test_with_no_reference_a_lossy_config_fails_closed(make_ctx: MakeContext,
                                                        tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), FakeMeasurer(), engine="llamacpp")
    lossy = run_trial(ctx, 1, Q4, defaults=False,
                      guard=guarded(ctx, optuna.create_study(), tmp_path, least=0.0))
    assert lossy.outcome == "quality_failed"
    assert lossy.quality is not None
    assert lossy.quality.agreement is None
    assert "no reference" in lossy.detail
    assert constraint_values(lossy, Slo(ttft_p95_ms=1000.0, itl_p95_ms=200.0))["launch"] == 1.0


def test_a_lossy_config_that_misses_the_slos_is_not_checked(make_ctx: MakeContext,
                                                             tmp_path: Path) -> None:
    measurer = FakeMeasurer(diverge={"Q4_0": 0})
    ctx = make_ctx(FakeLauncher("slo_infeasible"), measurer, engine="llamacpp")
    result = run_trial(ctx, 1, Q4, defaults=False,
                       guard=guarded(ctx, optuna.create_study(), tmp_path))
    assert result.outcome == "slo_infeasible"
    assert measurer.greedy_calls == []


def test_a_lossy_trial_waits_for_the_defaults_running_elsewhere(make_ctx: MakeContext,
                                                                tmp_path: Path) -> None:
    measurer = FakeMeasurer()
    ctx = make_ctx(FakeLauncher(), measurer, engine="llamacpp")
    study = optuna.create_study()
    study.enqueue_trial({}, user_attrs={"defaults": True})
    elsewhere = study.ask()  # the defaults trial, running on another worker
    guard = guarded(ctx, study, tmp_path)

    def defaults_answer() -> None:
        time.sleep(0.2)
        other = make_ctx(FakeLauncher(), FakeMeasurer(), engine="llamacpp")
        run_trial(other, elsewhere.number, {}, defaults=True, guard=guard)

    worker = threading.Thread(target=defaults_answer)
    worker.start()
    lossy = run_trial(ctx, 5, Q4, defaults=False, guard=guard)
    worker.join()
    assert lossy.outcome == "ok"
    assert lossy.quality is not None
    assert lossy.quality.reference_trial == elsewhere.number
    assert lossy.quality.seconds >= 0.1


def test_a_study_tells_optuna_a_failed_check_as_infeasible(make_ctx: MakeContext,
                                                           tmp_path: Path) -> None:
    ctx = make_ctx(FakeLauncher(), FakeMeasurer(diverge={"Q4_0": 8}), engine="llamacpp")
    ctx.workload = ctx.workload.model_copy(update={"quality": QualityCheck(max_tokens=16)})
    cfg = StudyConfig(engine="llamacpp", workload=SMOKE, model="/m", trials=2,
                      out_dir=tmp_path, study_name="quality", enqueue=[Q4])
    state = StudyProgress()
    study = run_search(cfg, ctx, NullTracker(), state)
    by_number = {r.number: r for r in state.results}
    assert by_number[0].outcome == "ok"
    assert by_number[1].outcome == "quality_failed"
    told = study.trials[1]
    assert told.state == TrialState.COMPLETE
    assert told.user_attrs["outcome"] == "quality_failed"
    assert told.constraints["launch"] > 0
    assert study.best_trial.number == 0
