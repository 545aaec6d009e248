"""What MLflow's UI is given to show a study: the experiment's kind and the saved view of its
trials (as the UI of MLflow 3.17 reads them), trial runs named by number, outcome and cost,
and the quality check's figures, in a real MLflow store (SQLite); and the line at a study's
end that names a best configuration's unchecked lossy knobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tuner.engines import load_engine_spec
from tuner.metrics import Agreement, QualityVerdict
from tuner.study import TrialResult
from tuner.tracking.mlflow_tracker import MlflowTracker, trial_run_name
from tuner.tracking.runs_view import (
    KIND_TAG,
    MODEL_TRAINING,
    VIEW_KEY,
    VIEW_TAG,
    experiment_tags,
    review_line,
    runs_page,
)
from tuner.ui import lossy_unchecked


def test_the_saved_view_lists_trials_cheapest_first_with_the_review_columns() -> None:
    tags = experiment_tags(now_ms=1000)
    assert tags[KIND_TAG] == MODEL_TRAINING
    view = json.loads(tags[VIEW_TAG])
    # the envelope MLflow's UI reads a saved view from: name, times, and its state as JSON
    assert (view["name"], view["createdAt"], view["updatedAt"]) == (
        "tuner: trials, cheapest first", 1000, 1000)
    state = json.loads(view["state"])
    assert state["searchFilter"] == "tags.`tuner.role` = 'trial'"
    assert state["orderByKey"] == "metrics.`cost_per_m_output_tokens`"
    assert state["orderByAsc"] is True
    assert state["selectedColumns"][:5] == [
        "metrics.`cost_per_m_output_tokens`", "metrics.`max_load`", "metrics.`ttft_p95_ms`",
        "metrics.`itl_p95_ms`", "tags.`tuner.outcome`"]
    assert len(tags[VIEW_TAG]) < 5000  # within MLflow's limit for a tag's value


def test_the_review_line_names_the_page_of_a_server_or_how_to_serve_a_local_store() -> None:
    page = runs_page("7")
    assert page == (f"#/experiments/7/runs?viewStateShareKey={VIEW_KEY}"
                    "&workflowType=machine_learning")
    served = review_line("http://mlflow:5000/", page)
    assert served == f"trials in MLflow: http://mlflow:5000/{page}"
    local = review_line("sqlite:///runs/s/mlflow.db", page)
    assert "mlflow ui --backend-store-uri sqlite:///runs/s/mlflow.db" in local
    assert local.endswith(f"http://127.0.0.1:5000/{page}")


def test_trial_runs_are_named_by_number_outcome_and_cost() -> None:
    ok = TrialResult(number=4, config={}, defaults=False, outcome="ok",
                     cost_per_m_output_tokens=0.123456)
    assert trial_run_name(ok) == "trial-004 ok $0.1235/M"
    oom = TrialResult(number=12, config={}, defaults=False, outcome="oom")
    assert trial_run_name(oom) == "trial-012 oom"
    failed = TrialResult(number=5, config={}, defaults=False, outcome="quality_failed",
                         cost_per_m_output_tokens=0.1)
    assert trial_run_name(failed) == "trial-005 quality_failed"  # it cannot win: no cost shown
    start = TrialResult(number=3, config={}, defaults=True, outcome="ok",
                        cost_per_m_output_tokens=0.123456, pair=2)
    assert trial_run_name(start) == "start-003 pair 2 ok $0.1235/M"


def test_the_remeasurement_s_starts_are_named_by_trial_start_pair_and_cost() -> None:
    from tests.unit.fakes.summaries import fake_summary
    from tuner.study.repeats import MeasuredRun
    from tuner.tracking.start_runs import start_metrics, start_run_name

    s = fake_summary(10.0, True)  # the best step at 10 req/s; the capacity 12
    ok = MeasuredRun(engine="vllm", trial=3, defaults=False, repeat=1, load=12.0,
                     usd_per_hour=3.6, summary=s, scale=1.2)
    cost = 1e6 / 1000 / (s.output_token_throughput * 1.2)  # $3.6/h is $1e-3/s
    assert start_run_name(ok) == f"trial-003 start 1 pair 1 ok ${cost:.4g}/M"
    assert start_metrics(ok)["max_load"] == 12.0
    bound = ok.model_copy(update={"bound": True})
    assert "max_load" not in start_metrics(bound)
    assert start_metrics(bound)["max_load_at_least"] == 12.0
    crashed = MeasuredRun(engine="vllm", trial=0, defaults=True, repeat=2, load=0.0,
                          usd_per_hour=3.6, failure="crashed_during_load: exit 139")
    assert start_run_name(crashed) == "trial-000 start 2 pair 2 failed"
    assert start_metrics(crashed) == {}


@pytest.mark.slow
def test_a_study_in_a_real_store_opens_as_model_training_with_its_checked_trials(
        tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = MlflowTracker(uri, tmp_path / "artifacts")
    tracker.start_study("s", tags={}, params={})
    verdict = QualityVerdict(
        lossy={"kv_cache_dtype": "fp8"}, min_token_agreement=0.95, seconds=2.5,
        agreement=Agreement(token_agreement=0.5, identical=2, prompts=8,
                            first_divergence=[None, None, 1, 2, 3, 4, 5, 6],
                            logprob_mean_abs_diff=0.25, compared="engine tokens"))
    tracker.log_trial(TrialResult(number=1, config={"kv_cache_dtype": "fp8"}, defaults=False,
                                  outcome="quality_failed", quality=verdict,
                                  cost_per_m_output_tokens=0.2, max_load=3.0))
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("s")
    assert exp is not None
    assert exp.tags[KIND_TAG] == MODEL_TRAINING
    assert VIEW_TAG in exp.tags
    assert tracker.runs_page() == runs_page(exp.experiment_id)
    tracker.log_trial(TrialResult(number=3, config={}, defaults=True, outcome="ok",
                                  cost_per_m_output_tokens=0.1, max_load=9.0, pair=2))
    paired = client.search_runs([exp.experiment_id], "tags.`tuner.pair` = '2'")
    assert [(r.info.run_name, r.data.tags["tuner.start"]) for r in paired] == [
        ("start-003 pair 2 ok $0.1/M", "3")]
    run = client.search_runs([exp.experiment_id], "tags.`tuner.trial` = '1'")[0]
    assert run.info.run_name == "trial-001 quality_failed"
    assert run.data.tags["tuner.quality"] == "failed"
    assert run.data.params["quality.lossy.kv_cache_dtype"] == "fp8"
    m = run.data.metrics
    assert (m["quality.token_agreement"], m["quality.identical_share"],
            m["quality.logprob_mean_abs_diff"], m["quality.min_token_agreement"],
            m["quality.passed"]) == (0.5, 0.25, 0.25, 0.95, 0.0)
    assert m["cost_per_m_output_tokens"] == 0.2  # measured, though it cannot win
    # a study's experiment made before (or by another version) gets the kind and view too
    client.delete_experiment_tag(exp.experiment_id, VIEW_TAG)
    MlflowTracker(uri, tmp_path / "artifacts").start_study("s", tags={}, params={})
    exp_again = client.get_experiment(exp.experiment_id)
    assert VIEW_TAG in exp_again.tags


def test_a_best_configuration_with_unchecked_lossy_knobs_is_named() -> None:
    spec = load_engine_spec("llamacpp")
    q4 = TrialResult(number=3, config={"quantization": "Q4_0", "threads": 2}, defaults=False,
                     outcome="ok")
    assert lossy_unchecked(spec, q4, checked=False, device="cpu") == "quantization=Q4_0"
    assert lossy_unchecked(spec, q4, checked=True, device="cpu") == ""
    f16 = q4.model_copy(update={"config": {"quantization": "F16"}})
    assert lossy_unchecked(spec, f16, checked=False, device="cpu") == ""
