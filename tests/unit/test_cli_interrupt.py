"""Ctrl-C and SIGTERM during `tune bench` end it the same documented way: what was measured
is written (the JSON, marked interrupted, and the records, in-flight requests with status 499),
one line, exit 130. Through the real command line against the test SSE server."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.sse_server import sse_server
from tests.unit.cli_runner import TUNE

WORKLOAD = """\
name: long
model: tiny-llama
classes:
  - {name: c, weight: 1, input: {dist: fixed, value: 32}, output: {dist: fixed, value: 8}}
arrival: {process: constant, rate: 8}
stop: {duration_s: 60}
slo: {ttft_p95_ms: 1000, itl_p95_ms: 200}
cost: {usd_per_hour: 1.0}
"""


def started(url: str) -> int:
    """The completions the test server has started (its /metrics counts 100 queries each)."""
    text = httpx.get(f"{url}/metrics").text
    line = next(ln for ln in text.splitlines() if ln.startswith("vllm:prefix_cache_queries_total"))
    return int(line.split()[1]) // 100


def hear_sigint() -> None:
    """The child's SIGINT as a terminal's: a test run in a background job inherits it ignored,
    and Python then installs no KeyboardInterrupt for it (the run went on to its end)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_bench_writes_what_it_measured(signum: int, tiny_model: Path,
                                                      tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "out.json"
    with sse_server(gap_s=0.05) as url:  # 8 tokens: 0.4 s a request, about 3 in flight
        proc = subprocess.Popen([*TUNE, "bench", "--endpoint", url, "--workload", str(workload),
                                 "--tokenizer", str(tiny_model), "--json", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=hear_sigint)
        assert proc.stdout is not None
        while not proc.stdout.readline().startswith("phase: measuring"):
            assert proc.poll() is None, proc.communicate()
        deadline, before = time.monotonic() + 30, started(url)  # the probes before it
        while started(url) - before < 8:  # not a fixed wait: a busy machine sends late
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "fewer than 8 requests sent in 30 s"
            time.sleep(0.05)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "error: interrupted"
    assert f"interrupted: what was measured is in {out}" in " ".join(stdout.split())
    report = json.loads(out.read_text())
    assert report["interrupted"] is True
    with out.with_name("out.records.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 8
    ended = [r for r in rows if r["error"].startswith("cancelled")]
    assert ended, "no request was in flight"
    assert {r["status"] for r in ended} == {"499"}
    assert all(r["status"] == "200" for r in rows if not r["error"])
