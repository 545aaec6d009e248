"""What `tune bench` prints about what it measured, through the real command line against the
test SSE server (a fake at the HTTP seam): loads with their units, the rate requests actually
went out, the capacity's bracket and why its search stopped, the engine's metrics."""

from __future__ import annotations

import re
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
    assert re.search(r"step 1, load 8 req/s: sent 16 \([\d.]+ req/s\), done 16", out), out
    assert "capacity search (load in req/s;" in out
    assert ("capacity: at least 16 req/s (passed there; no load that failed was found)"
            in out)
    assert ("search stopped after 2 steps: the step budget was spent (capacity.max_steps: 2) "
            "before any load failed: the capacity may be higher") in out
    assert "│ load │ 16 req/s │" in " ".join(out.split())
    assert "sent │ 32 requests at 16 req/s" in out
    # Engine metrics scraped over the step, small values with their digits. How many scrapes
    # fall between the step's first and last depends on how fast this busy machine's server
    # answers (each waits 50 times the last one's time): tests/unit/loadgen/test_scraper.py
    # tests that rule against a server of known delay. Here: the first and the last at least.
    assert "KV-cache usage mean / max │ 0.01% / 0.01%" in out
    scrapes = int(out.split("engine metrics │ ")[1].split()[0])
    assert scrapes >= 2


@pytest.mark.slow
def test_runs_that_measured_nothing_or_met_no_slo_exit_non_zero(tiny_model: Path,
                                                                 tmp_path: Path) -> None:
    from tests.unit.cli_runner import one_line_error

    warm_only = tmp_path / "warm.yaml"  # two at a time, 8 requests, all inside the warm-up
    warm_only.write_text(CAPACITY.replace("arrival: {process: constant, rate: 8}",
                                          "arrival: {process: concurrency, concurrency: 2}")
                         .replace("stop: {duration_s: 2}", "stop: {requests: 8}")
                         .replace("warmup: {engine: {enabled: false}}",
                                  "warmup: {duration_s: 30, engine: {enabled: false}}"))
    too_tight = tmp_path / "tight.yaml"  # the fake streams a token every 5 ms
    too_tight.write_text(CAPACITY.replace("itl_p95_ms: 200", "itl_p95_ms: 2"))
    with sse_server(gap_s=0.005) as url:
        def bench(workload: Path, *extra: str) -> list[str]:
            return ["bench", "--endpoint", url, "--workload", str(workload), "--tokenizer",
                    str(tiny_model), *extra]

        # One after the other: at once, they would saturate a 2-core load generator.
        unmeasured, failed, search = (tune(*bench(warm_only)), tune(*bench(too_tight)),
                                      tune(*bench(too_tight, "--find-capacity")))
    one_line_error(unmeasured, 1, "nothing was measured: all 8 requests sent were warm-up")
    assert "not measured (all 8 requests sent were warm-up" in unmeasured.stdout
    one_line_error(failed, 3, "the run did not meet the SLOs at 8 req/s: fail (itl_p95_ms")
    # 8 failed, then 4 (the search halves the load while nothing has passed), or 8 again
    # when the 2-core client was saturated at 8 (a saturated step is measured once more).
    one_line_error(search, 3, "no load met the SLOs: all 2 measured steps failed; the lowest, ")
    assert "req/s: fail (itl_p95_ms" in search.stderr
