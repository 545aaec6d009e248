"""The quality check of lossy knobs for real: llama.cpp (llama-server) on the
tiny model's GGUF variants, the F16 file against Q4_0 (the variant is the `quantization`
knob: a file of the model folder, as in the search-efficiency grid).

What to expect: the tiny model's weights are random, so its greedy answers soon settle into
repeating one to three tokens, and where its logits' top two are close, Q4_0's rounding
(4 bits per weight in blocks of 32, and 8-bit activations in llama.cpp's dot products) flips
the choice. A simulation of the rounding in PyTorch (64 tokens) agreed with F16 on 0.28 of
the tokens up to the first difference for Q4_0 (Q8_0: 0.84); llama.cpp itself, 32 tokens:
0.625, four of the eight answers identical and two differing from their first token. Either
way Q4_0 fails a 0.95 threshold. The same F16 file on a fresh start answers exactly as before
(agreement 1.0, log-probabilities equal), so a failure is the quantisation's, not noise.
The study's load is light and its SLOs loose: the check runs on configurations that met
them, and what is tested is the check, not the capacity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tuner.engines import load_engine_spec
from tuner.launch import EngineHandle, LaunchRequest, ProcessLauncher, wait_ready
from tuner.metrics import GreedyAnswer, agreement
from tuner.study import HttpMeasurer
from tuner.workload import load_workload

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SERVED = "tiny-llama"


def answers(model: Path, variant: str, log_dir: Path) -> list[GreedyAnswer]:
    """A fresh llama.cpp start on one GGUF variant: its greedy answers, then it stops."""
    spec = load_engine_spec("llamacpp")
    handle: EngineHandle = ProcessLauncher().start(LaunchRequest(
        spec=spec, config={"quantization": variant}, model=str(model), served_name=SERVED,
        log_path=log_dir / f"{variant}-{len(list(log_dir.glob('*.log')))}.log"))
    try:
        wait_ready(handle, spec, SERVED, timeout_s=300)
        measurer = HttpMeasurer(spec=spec, workload=load_workload(
            DATA / "workload-llamacpp-quality.yaml"), served_name=SERVED, tokenizer=model)
        return measurer.greedy(handle, 32)
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def f16(gguf_model: Path, tmp_path_factory: pytest.TempPathFactory) -> list[GreedyAnswer]:
    return answers(gguf_model, "F16", tmp_path_factory.mktemp("f16"))


def test_a_fresh_start_of_the_same_file_answers_the_same(
        f16: list[GreedyAnswer], gguf_model: Path, tmp_path: Path) -> None:
    again = agreement(f16, answers(gguf_model, "F16", tmp_path))
    assert again.compared == "engine tokens"  # llama-server returns them, with logprobs
    assert again.token_agreement == 1.0
    assert again.identical == again.prompts == 8
    assert again.logprob_mean_abs_diff is not None
    assert again.logprob_mean_abs_diff < 1e-3


def test_q4_0_answers_differ_from_f16(f16: list[GreedyAnswer], gguf_model: Path,
                                      tmp_path: Path) -> None:
    q4 = agreement(f16, answers(gguf_model, "Q4_0", tmp_path))
    print(f"Q4_0 against F16: {q4.model_dump_json()}")
    assert q4.token_agreement < 0.95


def test_a_study_fails_q4_0_on_quality_and_mlflow_has_the_figures(gguf_model: Path,
                                                                   tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "--engine", "llamacpp",
         "--workload", str(DATA / "workload-llamacpp-quality.yaml"),
         "--model", str(gguf_model), "--trials", "2", "--remeasure-top", "0",
         "--enqueue", str(DATA / "enqueue-llamacpp-quality.yaml"),
         "--out", str(tmp_path), "--study-name", "quality", "--seed", "1",
         "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "quality"
    trials = {t["number"]: t for t in (json.loads(p.read_text())
                                       for p in (folder / "trials").glob("*.json"))}
    assert trials[0]["defaults"]  # its answers are the reference, whatever its capacity
    reference = json.loads((folder / "quality" / "reference.json").read_text())
    assert reference["trial"] == 0
    assert len(reference["answers"]) == 8
    q4 = trials[1]
    assert q4["config"]["quantization"] == "Q4_0"
    assert q4["quality"]["lossy"] == {"quantization": "Q4_0"}
    found = q4["quality"]["agreement"]
    print(f"study: Q4_0 token agreement {found['token_agreement']:.3f}, first differences "
          f"{found['first_divergence']}")
    assert found["token_agreement"] < 0.95
    assert q4["outcome"] == "quality_failed"
    assert q4["cost_per_m_output_tokens"] is not None  # it was measured, and cannot win
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["best_trial"] or {}).get("number") != 1  # Q4_0 cannot win
    assert summary["trials"]["quality_failed"] == 1

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("quality")
    assert exp is not None
    run = client.search_runs([exp.experiment_id], "tags.`tuner.trial` = '1'")[0]
    assert run.info.run_name == "trial-001 quality_failed"
    assert run.data.tags["tuner.outcome"] == "quality_failed"
    assert run.data.tags["tuner.quality"] == "failed"
    assert run.data.metrics["quality.token_agreement"] == pytest.approx(found["token_agreement"])
    assert run.data.metrics["quality.min_token_agreement"] == 0.95
    if found["logprob_mean_abs_diff"] is not None:  # some answer agreed on a first token
        assert run.data.metrics["quality.logprob_mean_abs_diff"] == pytest.approx(
            found["logprob_mean_abs_diff"])
    assert [a.path for a in client.list_artifacts(run.info.run_id, "quality")] == [
        "quality/trial-001.json"]
