"""A real study on a real vLLM: trials, a rule rejection, a real engine failure, MLflow,
summary.json, and no secret anywhere."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from tests.integration.conftest import SECRET, Study

# They measure: they wait until set-up's background compile is done (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine_to_itself")]


def test_short_study_end_to_end(vllm_study: Study) -> None:
    done, run_dir = vllm_study.done, vllm_study.run_dir
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())

    # Trial 0 is the defaults; one config never launched; one real vLLM refusal classified.
    assert summary["defaults_trial"]["number"] == 0
    assert summary["defaults_trial"]["defaults"] is True
    trials = [json.loads(p.read_text()) for p in sorted((run_dir / "trials").glob("*.json"))]
    rejected = [t for t in trials if t["rejected_before_launch"]]
    assert rejected[0]["number"] == 1  # the first enqueued config
    assert rejected[0]["broken_rules"][0].startswith("batched_tokens_below_batch_size")
    assert all(t["command"] is None for t in rejected)
    refused = [t for t in trials if t["config"].get("max_model_len") == 100000]
    assert len(refused) == 1
    assert refused[0]["outcome"] == "invalid_config"
    assert "max_model_len" in refused[0]["detail"] or "max_model_len" in refused[0]["log_tail"]
    assert summary["trials"]["rejected_before_launch"] == len(rejected)
    assert sum(v for k, v in summary["trials"].items() if k != "rejected_before_launch") == 3

    # Default vs best (re-measured on fresh starts in the compare test, which reuses this study).
    assert summary["best_trial"] is not None
    assert summary["defaults_trial"]["cost_per_m_output_tokens"] > 0
    assert summary["verdict"]
    shares = summary["time_shares"]
    assert abs(sum(shares.values()) - 1.0) < 0.01
    assert shares["startup"] > 0.2
    assert "defaults (trial 0)" in done.stdout

    # MLflow: the parent run and one nested run per trial, with their artifacts.
    client = MlflowClient(tracking_uri=f"sqlite:///{vllm_study.tracking}")
    exp = client.get_experiment_by_name("vllm-workload-ci")
    runs = client.search_runs([exp.experiment_id])
    parent = [r for r in runs if r.data.tags.get("tuner.role") == "study"]
    nested = [r for r in runs if r.data.tags.get("tuner.role") == "trial"]
    assert len(parent) == 1
    assert len(nested) == len(trials)
    assert {r.data.tags["mlflow.parentRunId"] for r in nested} == {parent[0].info.run_id}
    p = parent[0]
    assert p.data.params["engine"] == "vllm"
    assert p.data.params["engine_version"].startswith("vllm")
    assert len(p.data.params["workload_sha256"]) == 64
    top = {a.path for a in client.list_artifacts(p.info.run_id)}
    assert {"best_config.yaml", "launch_command.sh", "summary.json", "plots"} <= top
    plots = {a.path for a in client.list_artifacts(p.info.run_id, "plots")}
    assert "plots/optimization_history.png" in plots
    ok = next(r for r in nested if r.data.tags["tuner.outcome"] == "ok")
    assert "knob.max_batch_size" in ok.data.params
    assert ok.data.params["launch_command"].startswith("VLLM_CPU_KVCACHE_SPACE=")
    assert ok.data.metrics["cost_per_m_output_tokens"] > 0
    arts = {a.path for a in client.list_artifacts(ok.info.run_id)}
    assert {"trial.json", "launch_command.sh", "engine", "records"} <= arts

    # The token reached the engine's environment, and nothing else.
    for path in run_dir.parent.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in done.stdout + done.stderr
