"""What `tune bench` prints about what it measured, through the real command line against the
test SSE server (a fake at the HTTP seam): loads with their units, the rate requests actually
went out, the capacity's bracket and why its search stopped, the engine's metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sse_server import sse_server
from tests.unit.cli_runner import tune

CAPACITY = """\
name: cap
model: tiny-llama
classes:
  - {name: c, weight: 1, input: {dist: fixed, value: 32}, output: {dist: fixed, value: 8}}
arrival: {process: constant, rate: 8}
stop: {duration_s: 2}
slo: {ttft_p95_ms: 1000, itl_p95_ms: 200}
cost: {usd_per_hour: 1.0}
warmup: {engine: {enabled: false}}
capacity: {max_steps: 2, step_duration_s: 2, min_requests: 8}
"""


@pytest.mark.slow
def test_capacity_says_its_bracket_and_why_it_stopped(tiny_model: Path, tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(CAPACITY)
    with sse_server(gap_s=0.005) as url:
        done = tune("bench", "--endpoint", url, "--workload", str(workload), "--tokenizer",
                    str(tiny_model), "--find-capacity")
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the console wraps long lines at 80 columns
    assert "step 1, load 8 req/s: sent 16 (8 req/s), done 16" in out
    assert "capacity search (load in req/s;" in out
    assert ("capacity: at least 16 req/s (passed there; no load that failed was found)"
            in out)
    assert ("search stopped after 2 steps: the step budget was spent (capacity.max_steps: 2) "
            "before any load failed: the capacity may be higher") in out
    assert "│ load │ 16 req/s │" in " ".join(out.split())
    assert "sent │ 32 requests at 16 req/s" in out
    # Engine metrics scraped often enough to see the run, small values with their digits.
    assert "KV-cache usage mean / max │ 0.01% / 0.01%" in out
    scrapes = int(out.split("engine metrics │ ")[1].split()[0])
    assert scrapes >= 4  # a 2 s step: its first and last scrape, and more between
