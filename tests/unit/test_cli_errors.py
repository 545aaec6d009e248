"""Errors that name the real mistake, through the real command line: the first line names the
file, the key or value written wrong (an unknown key before the required one it stands for,
with the closest valid name), the line of a trace, and the fix; exit code 2."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import typer

from tests.unit.cli_runner import REPO, TUNE, one_line_error, tune_all
from tuner.cli import check_workers

SMOKE = (REPO / "experiments" / "workloads" / "smoke.yaml").read_text()
GOOD_LINE = '{"offset_s": 0, "input_tokens": 10, "output_tokens": 5}\n'


def bench(workload: Path) -> list[str]:
    return ["bench", "--endpoint", "http://127.0.0.1:9", "--workload", str(workload)]


@pytest.mark.slow
def test_workload_errors_name_what_was_written_wrong(tmp_path: Path) -> None:
    cases: list[tuple[str, str]] = []

    def case(name: str, text: str, first_line: str) -> None:
        (tmp_path / name).write_text(text)
        cases.append((name, first_line))

    case("slo.yaml", SMOKE.replace("ttft_p95_ms: 1000", "ttft_p95_s: 1"),
         "slo.yaml: slo.ttft_p95_s: unknown key; did you mean `ttft_p95_ms`?")
    case("mean.yaml", SMOKE.replace("{dist: normal, mean: 64, std: 16, min: 8, max: 128}",
                                    "{dist: normal, mean: -64, std: 16}"),
         "mean.yaml: classes.0.output.normal.mean: Input should be greater than 0 (got -64) "
         "(and 2 more)")
    trace = SMOKE.replace("arrival: {process: poisson, rate: 2.0}",
                          "arrival: {process: trace, file: t.jsonl}")
    (tmp_path / "t.jsonl").write_text(GOOD_LINE + '{"offset_s": 1, "input_tokens": 10}\n')
    case("out.yaml", trace, "out.yaml: arrival.trace: ")
    (tmp_path / "o.jsonl").write_text(GOOD_LINE + '{"input_tokens": 10, "output_tokens": 5}\n')
    case("offset.yaml", trace.replace("t.jsonl", "o.jsonl"), "offset.yaml: arrival.trace: ")
    done = tune_all(*(bench(tmp_path / name) for name, _ in cases))
    for (_, first_line), result in zip(cases, done, strict=True):
        line = one_line_error(result, 2, first_line)
        assert "\n" not in result.stderr.strip(), result.stderr  # one line, no pydantic dump
        assert "errors.pydantic.dev" not in line
    assert one_line_error(done[2], 2, "t.jsonl line 2: `output_tokens` (or output_length) "
                          "missing; each line needs offset_s")
    assert one_line_error(done[3], 2, "o.jsonl line 2: `offset_s` (or timestamp, in ms) "
                          "missing")


def test_a_malformed_setting_names_its_variable() -> None:
    import os
    import subprocess

    from tests.unit.cli_runner import TUNE

    done = subprocess.run([*TUNE, "cleanup"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TUNER_PIN_CORES": "maybe"})
    one_line_error(done, 2, "environment: TUNER_PIN_CORES='maybe': Input should be a valid "
                   "boolean")


def test_implausible_values_are_warned_before_the_run(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(SMOKE.replace("ttft_p95_ms: 1000", "ttft_p95_ms: 1")
                        .replace("rate: 2.0}", "rate: 500}")
                        .replace("stop: {duration_s: 10}", "stop: {requests: 20}"))
    (done,) = tune_all(bench(workload))
    assert done.returncode == 2  # the endpoint is unreachable: the warnings come first
    lines = done.stderr.splitlines()
    assert "slo.ttft_p95_ms is 1 ms, faster than any engine serves: seconds written as " \
        "milliseconds? (1 s is 1000)" in lines[0]
    assert "500 req/s with stop.requests 20: every request goes out in 0.04 s" in lines[1]
    assert lines[2].startswith("error: cannot reach http://127.0.0.1:9")


def test_a_misspelt_model_is_named_before_any_tokenizer_is_looked_for(tmp_path: Path) -> None:
    from tests.sse_server import sse_server

    workload = tmp_path / "w.yaml"
    workload.write_text(SMOKE.replace("model: tiny-llama", "model: tiny-lama"))
    with sse_server() as url:  # serves tiny-llama; no tokenizer exists for tiny-lama
        (done,) = tune_all(["bench", "--endpoint", url, "--workload", str(workload)])
    one_line_error(done, 2, f"{url} does not serve model 'tiny-lama'; it serves tiny-llama: "
                   "did you mean 'tiny-llama'? set `model:` in the workload")


@pytest.mark.slow
def test_endpoints_that_are_not_a_base_url_say_which_to_give(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(SMOKE)
    no_scheme, route = tune_all(
        ["bench", "--endpoint", "127.0.0.1:8123", "--workload", str(workload)],
        ["bench", "--endpoint", "http://127.0.0.1:8123/v1/chat/completions", "--workload",
         str(workload)])
    one_line_error(no_scheme, 2, "--endpoint '127.0.0.1:8123' needs a scheme: give "
                   "http://127.0.0.1:8123")
    one_line_error(route, 2, "--endpoint 'http://127.0.0.1:8123/v1/chat/completions' is the "
                   "/v1/chat/completions route; give the base URL http://127.0.0.1:8123")


@pytest.mark.slow
def test_a_tokenizer_given_that_is_not_there_is_named(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(SMOKE.replace("model: tiny-llama", "model: tiny-llama\ntokenizer: tk"))
    in_workload, option = tune_all(
        bench(workload),
        ["bench", "--endpoint", "http://127.0.0.1:9", "--workload", str(REPO / "experiments"
         / "workloads" / "smoke.yaml"), "--tokenizer", str(tmp_path / "nowhere")])
    one_line_error(in_workload, 2, f"w.yaml: tokenizer: no tokenizer.json at {tmp_path / 'tk'}; "
                   "give the folder that holds it")
    one_line_error(option, 2, f"--tokenizer {tmp_path / 'nowhere'}: no tokenizer.json there")


@pytest.mark.slow
def test_report_on_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    missing, a_file = tune_all(["report", "--dir", str(tmp_path / "nope")],
                               ["report", "--dir", str(REPO / "README.md")])
    one_line_error(missing, 2, f"--dir {tmp_path / 'nope'}: no such folder; give the folder "
                   "tune compare or tune wrote")
    one_line_error(a_file, 2, "README.md: a file, not a folder")


@pytest.mark.slow
def test_a_shared_study_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    half, both, down, no_db = tune_all(
        ["report", "--storage", "sqlite:///x.db"],
        ["report", "--dir", str(tmp_path), "--storage", "sqlite:///x.db", "--study", "s"],
        ["report", "--storage", "postgresql://tuner:pw@127.0.0.1:1/tuner", "--study", "s"],
        ["export", "--storage", f"sqlite:///{tmp_path / 'none.db'}", "--study", "s",
         "--format", "command"])
    one_line_error(half, 2, "--storage and --study go together")
    one_line_error(both, 2, "--dir and --storage both name the study: give one of them")
    one_line_error(down, 2, "--storage postgresql://tuner:***@127.0.0.1:1/tuner: "
                   "cannot reach it")
    one_line_error(no_db, 2, f"no such file {tmp_path / 'none.db'}")


@pytest.mark.slow
def test_the_recorded_comparison_is_rebuilt_by_tune_report(tmp_path: Path) -> None:
    """experiments/compare-cpu/results ships what `tune report` needs (its inputs and the
    studies' trials): rebuilt in a copy, the verdict is the recorded one."""
    import json
    import shutil

    results = REPO / "experiments" / "compare-cpu" / "results"
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    inputs = json.loads((copy / "inputs.json").read_text())
    for study in inputs["studies"]:  # the copy's studies, not the repository's
        study["study_dir"] = str(copy / Path(study["study_dir"]).name)
    inputs["workload"] = str(REPO / inputs["workload"])
    (copy / "inputs.json").write_text(json.dumps(inputs))
    (done,) = tune_all(["report", "--dir", str(copy)])
    assert done.returncode == 0, done.stderr
    rebuilt = json.loads((copy / "compare.json").read_text())
    recorded = json.loads((results / "compare.json").read_text())
    assert rebuilt["verdict"] == recorded["verdict"]
    assert [e["tuning_delta"] for e in rebuilt["engines"]] == [
        e["tuning_delta"] for e in recorded["engines"]]


@pytest.mark.slow
def test_debug_adds_the_traceback_not_another_exit_code(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(SMOKE.replace("ttft_p95_ms: 1000", "ttft_p95_s: 1"))
    plain, debug = tune_all(bench(workload), [*bench(workload), "--debug"])
    line = one_line_error(plain, 2, "unknown key")
    assert debug.returncode == 2, debug.stderr
    assert debug.stderr.startswith("Traceback (most recent call last):")
    assert debug.stderr.strip().splitlines()[-1] == line  # the same line, last


def test_a_full_disk_outside_a_study_is_one_line_not_an_internal_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    """tune bench, measure or compare writing on a full disk (a study says more: its own
    handler names its folder and how to resume)."""
    import errno

    import typer

    from tuner.cli import run_cli

    def write() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/data/run/out.records.csv")

    with pytest.raises(typer.Exit) as exit_:
        run_cli(write, debug=False)
    assert exit_.value.exit_code == 1
    said = capsys.readouterr().err.strip()
    assert "\n" not in said
    assert said.startswith("error: no space left on the device (writing "
                           "/data/run/out.records.csv): ")
    assert "internal error" not in said


@pytest.mark.slow
def test_a_bad_resolution_or_repeat_count_of_measure_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("max_batch_size: 4\n")
    base = ["measure", "--engine", "vllm", "--workload", str(REPO / "tests/data/workload-ci.yaml"),
            "--model", str(tmp_path), "--against", "defaults", "--config", str(tmp_path / "x.yaml")]
    cases = [(["--resolution", "0"], "--resolution 0: give a relative difference between 0 and "
              "0.5, such as 0.05 for ±5%"),
             (["--resolution", "0.5"], "--resolution 0.5: give a relative difference"),
             (["--resolution", "-0.1"], "--resolution -0.1: give a relative difference"),
             (["--resolution", "five"], "--resolution five: give a relative difference"),
             (["--repeats", "0"], "--repeats 0: give at least 1 (fresh starts, or pairs of them "
              "with --against)"),
             (["--resume", str(tmp_path / "nowhere")], f"--resume {tmp_path / 'nowhere'}: no "
              "measure.json there; give a folder tune measure wrote")]
    study = ["--engine", "vllm", "--workload", str(REPO / "tests/data/workload-ci.yaml"),
             "--model", str(tmp_path), "--resolution", "0.7"]
    done = tune_all(*([*base, *extra] for extra, _ in cases), study)
    for (_, needle), result in zip(cases, done[:-1], strict=True):
        one_line_error(result, 2, needle)
    one_line_error(done[-1], 2, "--resolution 0.7: give a relative difference between 0 and 0.5")


def test_an_unknown_model_shape_is_one_line_naming_the_shapes(tmp_path: Path) -> None:
    (done,) = tune_all(["make-model", str(tmp_path / "m"), "--shape", "llama-9000"])
    one_line_error(done, 2, "--shape llama-9000: no such shape; give one of qwen2.5-0.5b, "
                   "smollm2-135m, smollm2-360m, tiny-llama")
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_a_bad_baseline_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    """tune --baseline FILE: the engine's defaults, a knob or flag the engine does not have, a
    value of the wrong kind, a rule of the engine's spec broken."""
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 4, '
        '"num_key_value_heads": 2, "num_hidden_layers": 2, "hidden_size": 64, '
        '"max_position_embeddings": 2048}')
    files = {"defaults": None,
             "knob.yaml": "max_num_seqs: 64\n",
             "flag.sh": "vllm serve /m --max-num-seq 64\n",
             "kind.yaml": "max_batch_size: lots\n",
             "rule.yaml": "max_batch_size: 64\nmax_batched_tokens: 32\n"}
    for name, text in files.items():
        if text is not None:
            (tmp_path / name).write_text(text)
    said = {"defaults": "--baseline defaults: names the engine's defaults, which every study "
                        "measures; give the configuration you run today, or leave it out",
            "knob.yaml": f"--baseline {tmp_path / 'knob.yaml'}: vllm has no knob "
                         "'max_num_seqs'; the knobs are in engines/vllm.yaml",
            "flag.sh": f"--baseline {tmp_path / 'flag.sh'}: read as vllm's command line: "
                       "--max-num-seq: not a knob of vllm the tuner knows",
            "kind.yaml": "--baseline: max_batch_size: 'lots' is not an integer; give one",
            "rule.yaml": "--baseline: breaks rule batched_tokens_below_batch_size of "
                         "engines/vllm.yaml: max_num_batched_tokens must be >= max_num_seqs"}
    study = ["--engine", "vllm", "--workload", str(REPO / "tests/data/workload-ci.yaml"),
             "--model", str(tmp_path), "--out", str(tmp_path / "runs"), "--baseline"]
    done = tune_all(*([*study, name if name == "defaults" else str(tmp_path / name)]
                      for name in files))
    for name, result in zip(files, done, strict=True):
        one_line_error(result, 2, said[name])
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("trial-*"))


@pytest.mark.slow
def test_a_served_name_for_an_engine_that_cannot_set_one_is_one_line(tmp_path: Path) -> None:
    """transformers serve answers only to the model it was started with: --served-name would
    name requests it refuses."""
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "num_attention_heads": 4, '
        '"num_key_value_heads": 2, "num_hidden_layers": 2, "hidden_size": 64, '
        '"max_position_embeddings": 2048}')
    (done,) = tune_all(["--engine", "transformers", "--workload",
                        str(REPO / "tests/data/workload-ci.yaml"), "--model", str(tmp_path),
                        "--out", str(tmp_path / "runs"), "--served-name", "tiny"])
    one_line_error(done, 2, "--served-name tiny: transformers serve has no option to name the "
                   "model it serves (requests name it by --model); leave --served-name out")


def test_more_workers_than_cores_is_one_line_naming_the_cores(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3, 5})
    assert check_workers(3) == 3
    with pytest.raises(typer.Exit) as done:
        check_workers(4)
    assert done.value.exit_code == 2
    said = " ".join(capsys.readouterr().err.split())
    assert said == ("error: --workers 4: this process may run on 3 core(s) (2-3,5); give at "
                    "most 3")


def test_a_transport_unknown_or_unable_to_use_the_proxy_is_one_line(tmp_path: Path) -> None:
    workload = REPO / "experiments" / "workloads" / "smoke.yaml"
    unknown, = tune_all([*bench(workload), "--transport", "h2"])
    one_line_error(unknown, 2, "--transport h2: not a transport; give one of raw, aiohttp, httpx")
    env = {**os.environ, "HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": ""}
    proxied = subprocess.run([*TUNE, "bench", "--endpoint", "http://gpu1.example:8000",
                              "--workload", str(workload), "--transport", "raw"],
                             capture_output=True, text=True, env=env, timeout=120)
    one_line_error(proxied, 2, "--transport raw: the raw transport cannot go through the proxy "
                   "http://proxy.example:3128; give --transport httpx")
