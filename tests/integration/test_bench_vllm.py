"""`tune bench` and the harness against a real vLLM. The last test stops the server."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tuner.host import realtime_allowed, running_on
from tuner.launch import EngineHandle
from tuner.measurement import open_bench
from tuner.workload import Workload

# They measure: they wait until set-up's background compile is done (tests/conftest.py).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("machine_to_itself")]
NS = 1e9


def workload(tiny_model: Path, **over: Any) -> Workload:
    base: dict[str, Any] = {
        "model": "tiny-llama", "tokenizer": str(tiny_model),
        "classes": [{"name": "short", "weight": 0.7,
                     "input": {"dist": "uniform", "min": 20, "max": 200},
                     "output": {"dist": "uniform", "min": 4, "max": 24}},
                    {"name": "long", "weight": 0.3,
                     "input": {"dist": "normal", "mean": 900, "std": 100, "min": 700,
                               "max": 1100},
                     "output": {"dist": "fixed", "value": 16}}],
        "arrival": {"process": "poisson", "rate": 4.0}, "stop": {"requests": 30},
        "seed": 1, "slo": {"ttft_p95_ms": 5000, "itl_p95_ms": 1000, "max_error_rate": 0.5},
        "cost": {"usd_per_hour": 1.0}}
    base.update(over)
    return Workload.model_validate(base)


def run(w: Workload, handle: EngineHandle, **kw: Any) -> Any:
    async def go() -> Any:
        bench = await open_bench(w, handle.base_url)
        summary = await bench.once(**kw)
        return bench, summary
    return asyncio.run(go())


def test_exact_input_lengths_and_forced_output_lengths(tiny_model: Path,
                                                       vllm: EngineHandle) -> None:
    bench, s = run(workload(tiny_model), vllm)
    recs = bench.records
    assert len(recs) == 30
    assert all(r.ok for r in recs), [r.error for r in recs if not r.ok]
    assert [r.prompt_tokens for r in recs] == [r.input_tokens for r in recs]
    assert [r.output_tokens for r in recs] == [r.planned_output_tokens for r in recs]
    assert s.input_length_match == 1.0
    assert s.output_length_match == 1.0
    assert s.output_lengths_forced
    assert {r.class_name for r in recs} == {"short", "long"}
    assert s.server is not None
    assert s.server.samples >= 2
    assert s.mismatched == 0
    assert all(r.mismatch is None for r in recs)


def test_a_plain_run_measures_what_it_was_asked_even_when_the_slo_is_lost(
        tiny_model: Path, vllm: EngineHandle) -> None:
    """An SLO no engine can meet (1 ms TTFT): a plain run still sends and records every
    planned request (on main it stopped after a few), and says the SLO failed."""
    hopeless = {"ttft_p95_ms": 1, "itl_p95_ms": 1000, "max_error_rate": 0.5}
    bench, s = run(workload(tiny_model, slo=hopeless, stop={"requests": 16}), vllm)
    assert len(bench.records) == 16
    assert s.stopped_early is None
    assert all(r.ok for r in bench.records), [r.error for r in bench.records if not r.ok]
    assert not s.slo.passed
    assert "ttft_p95_ms" in s.slo.failed()


def test_chat_api_counts_the_template_once(tiny_model: Path, vllm: EngineHandle) -> None:
    bench, s = run(workload(tiny_model, api="chat", stop={"requests": 10}), vllm)
    overhead = bench.caps.chat_template_tokens
    assert overhead is not None
    assert overhead > 0
    assert all(r.prompt_tokens == r.input_tokens + overhead for r in bench.records)
    assert s.input_length_match == 1.0
    assert s.output_length_match == 1.0


def test_prefix_sharing_shows_in_vllms_prefix_cache(tiny_model: Path, vllm: EngineHandle) -> None:
    shared = workload(tiny_model, prefix={"groups": 2, "tokens": 768, "share": 1.0},
                      stop={"requests": 24}, seed=21)
    _, with_prefix = run(shared, vllm, epoch=7)
    _, without = run(workload(tiny_model, stop={"requests": 24}, seed=22), vllm, epoch=7)
    assert with_prefix.server.prefix_cache_hit_rate > 0.4
    assert without.server.prefix_cache_hit_rate < 0.1
    assert with_prefix.input_length_match == 1.0


def sends(bench: Any) -> np.ndarray:
    return np.sort(np.array([r.sent_ns for r in bench.records], dtype=np.float64)) / NS


SMALL = [{"name": "s", "weight": 1, "input": {"dist": "fixed", "value": 16},
          "output": {"dist": "fixed", "value": 2}}]


def test_poisson_arrivals_are_exponential(tiny_model: Path, vllm: EngineHandle) -> None:
    bench, _ = run(workload(tiny_model, classes=SMALL, arrival={"process": "poisson",
                                                                 "rate": 8}, stop={"requests": 80}),
                   vllm)
    gaps = np.diff(sends(bench))
    assert stats.kstest(gaps, "expon", args=(0, 1 / 8)).pvalue > 0.001


def test_gamma_arrivals_follow_their_burstiness(tiny_model: Path, vllm: EngineHandle) -> None:
    bench, _ = run(workload(tiny_model, classes=SMALL,
                            arrival={"process": "gamma", "rate": 8, "burstiness": 0.3},
                            stop={"requests": 80}), vllm)
    gaps = np.diff(sends(bench))
    assert stats.kstest(gaps, "gamma", args=(0.3, 0, 1 / (8 * 0.3))).pvalue > 0.001
    assert gaps.std() / gaps.mean() > 1.3  # burstier than Poisson (cv 1)


def test_constant_arrivals_are_evenly_spaced(tiny_model: Path, vllm: EngineHandle) -> None:
    bench, _ = run(workload(tiny_model, classes=SMALL, arrival={"process": "constant", "rate": 5},
                            stop={"requests": 25}), vllm)
    gaps = np.diff(sends(bench))
    assert np.median(np.abs(gaps - 0.2)) < 0.002
    assert np.percentile(np.abs(gaps - 0.2), 90) < 0.02


def test_closed_loop_keeps_concurrency(tiny_model: Path, vllm: EngineHandle) -> None:
    bench, s = run(workload(tiny_model, arrival={"process": "concurrency", "concurrency": 3},
                            stop={"requests": 24}), vllm)
    events = sorted([(r.sent_ns, 1) for r in bench.records] +
                    [(r.done_ns, -1) for r in bench.records])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    assert peak == 3
    assert s.completed == 24


def test_trace_replay_sends_at_trace_offsets(tiny_model: Path, vllm: EngineHandle,
                                             tmp_path: Path) -> None:
    offsets = [0.0, 0.1, 0.15, 0.9, 1.0, 1.8, 2.5]
    (tmp_path / "trace.jsonl").write_text("\n".join(
        json.dumps({"offset_s": o, "input_tokens": 30 + i, "output_tokens": 3 + i})
        for i, o in enumerate(offsets)))
    w = Workload.model_validate({
        "model": "tiny-llama", "tokenizer": str(tiny_model),
        "arrival": {"process": "trace", "file": "trace.jsonl"}, "stop": {"requests": 7},
        "slo": {"ttft_p95_ms": 5000, "itl_p95_ms": 1000}, "cost": {"usd_per_hour": 1}},
        context={"base_dir": tmp_path})
    bench, _ = run(w, vllm)
    got = sends(bench)
    late = np.abs(got - got[0] - np.array(offsets))
    assert np.median(late) < 0.005
    assert late.max() < 0.05  # a busy 2-core machine may hold one send back, never by a gap
    assert [r.prompt_tokens for r in bench.records] == [30 + i for i in range(7)]
    assert [r.output_tokens for r in bench.records] == [3 + i for i in range(7)]


def tune_bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuner", "bench", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_cli_capacity_search_writes_figures_and_records(tiny_model: Path, vllm: EngineHandle,
                                                        tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"""
model: tiny-llama
tokenizer: {tiny_model}
classes:
  - {{name: c, weight: 1, input: {{dist: uniform, min: 50, max: 300}},
     output: {{dist: fixed, value: 24}}}}
arrival: {{process: constant, rate: 2}}
stop: {{duration_s: 4}}
warmup: {{engine: {{round_requests: 6, max_s: 20}}}}
slo: {{ttft_p95_ms: 10000, itl_p95_ms: 2000}}
cost: {{usd_per_hour: 0.5}}
capacity: {{max_steps: 3, tolerance: 0.3, step_duration_s: 4, min_requests: 20,
           max_step_s: 10, keep_up_tolerance: 0.25}}
""")
    # The SLOs (and the keep-up check, whose ratio a 20-request step's edges pull to about
    # 0.95) are generous and the first load is low (the tiny model serves several req/s on
    # two busy cores), so the first step passes and the search has a result.
    out = tmp_path / "res.json"
    done = tune_bench("--endpoint", vllm.base_url, "--workload", str(wl), "--find-capacity",
                      "--json", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["mode"] == "capacity"
    steps = report["capacity"]["steps"]
    assert len(steps) == 3  # 2, 4, then 8 req/s (or a bisection below 8): max_steps ends it
    assert steps[0]["load"] == 2.0
    assert steps[0]["slo"]["passed"], steps[0]["slo"]
    best = report["result"]
    assert best is not None
    assert best["slo"]["passed"]
    assert best["load"] == max(s["load"] for s in steps if s["slo"]["passed"])
    assert best["cost_per_m_output_tokens"] > 0
    assert report["capacity"]["estimate"]["low"] == best["load"]
    assert "capacity search" in done.stdout
    records = (tmp_path / "res.records.csv").read_text().splitlines()
    assert records[0].startswith("index,class_name")
    # Every request sent is a row: those a step counts, and those cancelled when a step that
    # could not keep up was stopped early (8 req/s on a slow or busy machine), marked so.
    rows = list(csv.DictReader(records))
    counted = [r for r in rows if not r["error"].startswith("cancelled")]
    assert len(counted) == sum(s["requests"] for s in steps)
    assert len(counted) == len(rows) or any(s["stopped_early"] for s in steps), steps


def test_cli_with_two_client_processes_sends_every_request_once_on_schedule(
        tiny_model: Path, vllm: EngineHandle, tmp_path: Path) -> None:
    """`tune bench --workers 2`: two processes share the sends; the merged records hold every
    planned request once, in plan order, each sent at its planned time on the shared clock."""
    wl = tmp_path / "w.yaml"
    wl.write_text(f"""
model: tiny-llama
tokenizer: {tiny_model}
classes:
  - {{name: c, weight: 1, input: {{dist: fixed, value: 32}}, output: {{dist: fixed, value: 8}}}}
arrival: {{process: poisson, rate: 6}}
stop: {{requests: 40}}
warmup: {{requests: 2}}
slo: {{ttft_p95_ms: 10000, itl_p95_ms: 2000}}
cost: {{usd_per_hour: 0.5}}
""")
    out = tmp_path / "res.json"
    done = tune_bench("--endpoint", vllm.base_url, "--workload", str(wl), "--workers", "2",
                      "--json", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    with (tmp_path / "res.records.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["index"]) for r in rows] == list(range(42))
    assert all(r["error"] == "" for r in rows), {r["error"] for r in rows}
    late_ms = sorted((int(r["sent_ns"]) - int(r["scheduled_ns"])) / 1e6 for r in rows)
    assert late_ms[0] >= 0  # never sent before its time
    assert late_ms[len(late_ms) // 2] < 20  # the median send on time (a loaded 2-core host)
    offsets = [int(r["scheduled_ns"]) for r in rows]
    assert offsets == sorted(offsets)


def test_cli_names_a_model_the_server_does_not_serve(tiny_model: Path, vllm: EngineHandle,
                                                     tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(f"""
model: llama-9000
tokenizer: {tiny_model}
classes:
  - {{name: c, weight: 1, input: {{dist: fixed, value: 8}}, output: {{dist: fixed, value: 2}}}}
arrival: {{process: concurrency, concurrency: 1}}
stop: {{requests: 2}}
slo: {{ttft_p95_ms: 400, itl_p95_ms: 80}}
cost: {{usd_per_hour: 0.5}}
""")
    done = tune_bench("--endpoint", vllm.base_url, "--workload", str(wl))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "does not serve model 'llama-9000'; it serves tiny-llama" in lines[0]


BUSY = """
import os, time
os.sched_setaffinity(0, {{{core}}})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(2))
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.012:
        pass
    time.sleep(0.008)
"""


def test_a_client_starved_of_its_core_is_flagged_and_a_healthy_one_is_not(
        tiny_model: Path, vllm: EngineHandle) -> None:
    """The load generator on a core of its own at a real-time priority, as `tune` runs it on
    a CPU host: at 30 req/s it is not flagged. A process of a higher real-time priority that
    takes 60% of that core in 12-ms bursts makes its event loop late, and the run says the
    load generator was saturated (issue 35, item 8)."""
    if not realtime_allowed():
        pytest.skip("a real-time priority needs root or CAP_SYS_NICE")
    core = max(os.sched_getaffinity(0))
    w = workload(tiny_model, classes=SMALL, arrival={"process": "constant", "rate": 30},
                 stop={"duration_s": 4}, seed=31)
    with running_on([core], realtime=True):
        _, healthy = run(w, vllm, epoch=31)
        busy = subprocess.Popen([sys.executable, "-c", BUSY.format(core=core)])
        try:
            time.sleep(0.3)
            _, starved = run(w, vllm, epoch=32)
        finally:
            busy.kill()
            busy.wait()
    assert healthy.client_saturated is None, healthy.client_saturated
    assert starved.client_saturated is not None
    assert "event loop" in starved.client_saturated


def test_errors_are_recorded_when_the_server_stops_mid_run(tiny_model: Path,
                                                          vllm: EngineHandle) -> None:
    """Must stay last in this module: it stops the shared server."""
    w = workload(tiny_model, classes=SMALL, arrival={"process": "constant", "rate": 5},
                 stop={"duration_s": 8})
    stopper = threading.Timer(3.0, vllm.stop)
    stopper.start()
    t0 = time.monotonic()
    bench, s = run(w, vllm)  # no stop_check: the run goes on through the errors
    stopper.join()
    assert time.monotonic() - t0 < 60
    ok = [r for r in bench.records if r.ok]
    failed = [r for r in bench.records if not r.ok]
    assert len(ok) >= 5
    assert len(failed) >= 10
    assert all(r.error for r in failed)
    assert s.errors == len(failed)
    assert not s.slo.passed
