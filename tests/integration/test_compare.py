"""A small comparison of vLLM, llama.cpp and transformers serve on CPU, reusing the vLLM study
of the tune test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.integration.conftest import REPO, Study

pytestmark = pytest.mark.integration


def test_compare_vllm_llamacpp_and_transformers(vllm_study: Study, transformers_study: Study,
                                                gguf_model: Path) -> None:
    assert vllm_study.done.returncode == 0, vllm_study.done.stderr[-2000:]
    assert transformers_study.done.returncode == 0, transformers_study.done.stderr[-2000:]
    reused = {s.run_dir: sorted(p.name for p in (s.run_dir / "trials").iterdir())
              for s in (vllm_study, transformers_study)}
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "compare", "--engines", "vllm,llamacpp,transformers",
         "--workload", str(REPO / "tests" / "data" / "workload-ci.yaml"),
         "--model", str(gguf_model), "--trials", "2", "--repeats", "1",
         "--out", str(vllm_study.out), "--seed", "3"],
        capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = vllm_study.out / "compare-workload-ci"
    # The vLLM and transformers studies were reused, not run again.
    assert {d: sorted(p.name for p in (d / "trials").iterdir()) for d in reused} == reused
    report = json.loads((folder / "compare.json").read_text())
    engines = {e["engine"]: e for e in report["engines"]}
    assert set(engines) == {"vllm", "llamacpp", "transformers"}
    assert report["verdict"]
    # Both engines' defaults and tuned best met the SLOs, and every figure comes from measured
    # trials: each cost is recomputed from stored records.
    measured_runs = {(r["engine"], r["trial"]) for r in report["runs"] if r["records_path"]}
    # Each fresh start searched its own capacity, as `tune measure` does.
    assert all(r["step"] is not None and r["load"] > 0 for r in report["runs"]
               if r["failure"] is None)
    for e in engines.values():
        for kind in ("defaults", "tuned"):
            m = e[kind]
            assert m is not None, f"{e['engine']} {kind}: {e['note']}"
            assert m["cost"] is not None, f"{e['engine']} {kind}: {m['failures']}"
            assert (e["engine"], m["trial"]) in measured_runs
            assert m["cost"]["low"] <= m["cost"]["value"] <= m["cost"]["high"]
        study_trials = {json.loads(p.read_text())["number"]
                        for p in (Path(e["study_dir"]) / "trials").glob("*.json")}
        assert {t["number"] for t in e["trials"]} <= study_trials
    # What an operator lives with, measured on each engine's own starts.
    ops = {name: e["operations"] for name, e in engines.items()}
    assert all(o["starts"] >= 1 and o["startup_median_s"] > 0 for o in ops.values()), ops
    assert ops["vllm"]["metric_families"] > 10
    assert ops["llamacpp"]["metric_families"] >= 1
    assert ops["transformers"]["metrics_endpoint"] is False
    assert all(o["health_lead_max_s"] is not None for o in ops.values()), ops
    assert (folder / "report.md").read_text().startswith("# Tuning delta vs engine delta")
    assert "## What an operator lives with" in (folder / "report.md").read_text()
    html = (folder / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3
    client = MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")
    run = client.search_runs([client.get_experiment_by_name("compare-workload-ci")
                              .experiment_id])[0]
    assert run.data.tags["tuner.role"] == "compare"
    assert run.data.tags["tuner.study_run.vllm"]
    assert {"report.html", "report.md", "compare.json"} <= {
        a.path for a in client.list_artifacts(run.info.run_id)}

    # `tune report` rebuilds the same report from the stored files, running nothing.
    shutil.move(folder / "compare.json", folder / "compare.before.json")
    rebuilt = subprocess.run([sys.executable, "-m", "tuner", "report", "--dir", str(folder)],
                             capture_output=True, text=True, timeout=300)
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = json.loads((folder / "compare.json").read_text())
    assert again["verdict"] == report["verdict"]
    assert again["engines"] == report["engines"]
