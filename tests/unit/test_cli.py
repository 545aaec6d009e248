"""Exit codes and one-line errors, through the real command line."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from tuner.launch import free_port

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "experiments" / "workloads" / "smoke.yaml"


def tune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner", *args], capture_output=True,
                          text=True, timeout=120)


def one_line_error(done: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    assert needle in lines[0]


def test_unreachable_endpoint(tiny_tokenizer: Path) -> None:
    port = free_port()
    done = tune("bench", "--endpoint", f"http://127.0.0.1:{port}", "--workload", str(WORKLOAD),
                "--tokenizer", str(tiny_tokenizer))
    one_line_error(done, 2, f"cannot reach http://127.0.0.1:{port}: connection refused")


class NotOpenAI(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()
        self.wfile.write(b"nothing here")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def plain_http() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), NotOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_server_that_is_not_openai_compatible(plain_http: str, tiny_tokenizer: Path) -> None:
    done = tune("bench", "--endpoint", plain_http, "--workload", str(WORKLOAD),
                "--tokenizer", str(tiny_tokenizer))
    one_line_error(done, 2, "is not an OpenAI-compatible server: GET /v1/models answered HTTP 404")


def test_bad_workload_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text(WORKLOAD.read_text().replace("rate: 2.0", "rate: 2.0, burst: 3"))
    done = tune("bench", "--endpoint", "http://127.0.0.1:1", "--workload", str(bad))
    one_line_error(done, 2, "arrival.poisson.burst: unknown key")


def test_missing_tokenizer_says_how_to_fix(tmp_path: Path) -> None:
    from tests.sse_server import sse_server

    wl = tmp_path / "w.yaml"
    wl.write_text(WORKLOAD.read_text().replace("model: tiny-llama", "model: nobody/none"))
    with sse_server(served="nobody/none") as url:  # served: the tokenizer is what is missing
        done = tune("bench", "--endpoint", url, "--workload", str(wl))
    one_line_error(done, 2, "pass --tokenizer DIR")


def test_tune_without_a_model_is_bad_input() -> None:
    done = tune("--engine", "vllm", "--workload", str(WORKLOAD))
    one_line_error(done, 2, "--model missing")


@pytest.mark.slow
def test_unknown_engine_lists_the_known_ones(tiny_model: Path) -> None:
    done = tune("--engine", "vlm", "--workload", str(WORKLOAD), "--model", str(tiny_model))
    one_line_error(done, 2,
                   "unknown engine 'vlm'; choose one of: llamacpp, sglang, tgi, transformers, "
                   "trtllm, vllm")


@pytest.mark.slow
def test_unknown_sampler_is_bad_input(tiny_model: Path, tmp_path: Path) -> None:
    done = tune("--engine", "vllm", "--workload", str(WORKLOAD), "--model", str(tiny_model),
                "--sampler", "smac", "--out", str(tmp_path))
    one_line_error(done, 2, "options: sampler: unknown sampler 'smac'; use one "
                   "of: tpe, tpe-multivariate, gp, random, qmc, cmaes")


@pytest.mark.slow
def test_device_gpu_without_gpus_is_bad_input(tiny_model: Path, tmp_path: Path) -> None:
    done = tune("--engine", "vllm", "--workload", str(WORKLOAD), "--model", str(tiny_model),
                "--device", "gpu", "--out", str(tmp_path))
    one_line_error(done, 2, "--device gpu: this host has no GPU")


@pytest.mark.parametrize(("extra", "needle"), [
    (["--launcher", "foo"], "options: launcher: Input should be 'process' or 'docker'"),
    (["--trials", "0"], "options: trials: Input should be greater than or equal to 1"),
])
@pytest.mark.slow
def test_compare_options_are_one_line(tiny_model: Path, tmp_path: Path, extra: list[str],
                                      needle: str) -> None:
    done = tune("compare", "--engines", "vllm,llamacpp", "--workload", str(WORKLOAD),
                "--model", str(tiny_model), "--out", str(tmp_path), *extra)
    one_line_error(done, 2, needle)


def test_a_workload_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(WORKLOAD.read_text().replace("smoke", "sm\u00f6ke").encode("latin-1"))
    done = tune("bench", "--endpoint", "http://127.0.0.1:9", "--workload", str(bad))
    one_line_error(done, 2, "not UTF-8 text")


def test_the_tracking_uri_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tuner import cli
    from tuner.commands import tune as tune_module

    seen = []
    monkeypatch.setattr(tune_module, "tune_command", lambda cfg, *a: seen.append(cfg))
    uri = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    done = CliRunner().invoke(cli.app, ["--engine", "vllm", "--workload", str(WORKLOAD),
                                        "--model", "m"], env={"TUNER_TRACKING_URI": uri})
    assert done.exit_code == 0, done.output
    assert seen[0].tracking == uri
    done = CliRunner().invoke(cli.app, ["--engine", "vllm", "--workload", str(WORKLOAD),
                                        "--model", "m", "--tracking-uri", "sqlite:///x.db"],
                              env={"TUNER_TRACKING_URI": uri})
    assert seen[1].tracking == "sqlite:///x.db"  # the option wins over the environment


@pytest.mark.parametrize(("kind", "code"), [("win", 0), ("no_gain", 4), ("unresolved", 5),
                                            (None, 5)])
def test_verdict_exit_tells_the_three_verdicts_apart(monkeypatch: pytest.MonkeyPatch,
                                                     kind: str | None, code: int) -> None:
    from types import SimpleNamespace

    from typer.testing import CliRunner

    from tuner import cli
    from tuner.commands import tune as tune_module

    monkeypatch.setattr(tune_module, "tune_command",
                        lambda cfg, *a: SimpleNamespace(verdict_kind=kind))
    args = ["--engine", "vllm", "--workload", str(WORKLOAD), "--model", "m"]
    assert CliRunner().invoke(cli.app, [*args, "--verdict-exit"]).exit_code == code
    assert CliRunner().invoke(cli.app, args).exit_code == 0  # without it: done is done


def test_a_race_no_longer_than_the_repeats_is_bad_input(tmp_path: Path) -> None:
    done = tune("--engine", "vllm", "--workload", str(WORKLOAD), "--model", "m",
                "--repeats", "3", "--race", "3", "--out", str(tmp_path))
    one_line_error(done, 2, "options: race_repeats: must be more than the re-measurement's "
                   "repeats (3)")
