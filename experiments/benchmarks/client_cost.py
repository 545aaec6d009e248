"""What the load generator costs per streamed token, next to vLLM's own client, in one run.

Server: tests/sse_server.py (raw asyncio, one process, on its own core): every response
streams ``max_tokens`` events 5 ms apart, shaped as vLLM's, with its continuous usage.
Clients, each on the other core, alternating, at a constant 20 req/s, 32 in / 128 out:
- ``vllm bench serve`` (vLLM's benchmark module, as installed),
- ``tune bench`` at BASE (the client before issue 11: httpx's own transport, asyncio's loop,
  ``aiter_lines`` and a JSON parse per event), from a git worktree of that commit,
- ``tune bench`` as it is now.
CPU per token is the client process's user+system CPU (``RUSAGE_CHILDREN``), differenced
between runs of 100 and 400 requests so that start-up and imports cancel.
Then the client's parts, in-process: the transport (httpx's own, httpx on aiohttp's, or the
raw asyncio protocols with httptools that ship), asyncio's loop or uvloop's (same records,
same run); one and two worker processes at rising rates; and the
JSON parsers on one vLLM event.

Run: .venv/bin/python experiments/benchmarks/client_cost.py   (~6 minutes on 2 cores)
Output kept in client_cost.txt next to this file.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import msgspec
import orjson

from tuner.core import Settings
from tuner.launch import free_port
from tuner.loadgen import Route, Runner, StreamClient, run_loop
from tuner.measurement import open_bench
from tuner.models import SERVED_NAME, make_model
from tuner.workload import Workload

BASE = "5778967"  # main before issue 11
INPUT, OUTPUT, RATE = 32, 128, 20.0
ROOT = Path(__file__).resolve().parents[2]

VLLM_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
"""


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    flags = Path("/proc/cpuinfo").read_text()
    return (f"{model}, {os.cpu_count()} cores, avx512f: {'avx512f' in flags}, "
            f"avx2: {'avx2' in flags}; python {sys.version.split()[0]}")


def workload_dict(model: Path, requests: int) -> dict[str, object]:
    return {"model": SERVED_NAME, "tokenizer": str(model),
            "classes": [{"name": "fixed", "weight": 1,
                         "input": {"dist": "fixed", "value": INPUT},
                         "output": {"dist": "fixed", "value": OUTPUT}}],
            "arrival": {"process": "constant", "rate": RATE}, "stop": {"requests": requests},
            "seed": 1, "slo": {"ttft_p95_ms": 60000, "itl_p95_ms": 60000, "max_error_rate": 1},
            "cost": {"usd_per_hour": 1.0}}


def child_cpu(cmd: list[str], cwd: Path = ROOT) -> float:
    """CPU seconds (user + system) of one client process run to the end, on core 1. ``cwd``
    is where ``tuner`` is imported from (``python -c`` puts it first on the path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["taskset", "-c", "1", *cmd], check=True, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vllm_cmd(url: str, model: Path, requests: int) -> list[str]:
    return [sys.executable, "-c", VLLM_BENCH, "--backend", "vllm", "--base-url", url,
            "--model", SERVED_NAME, "--tokenizer", str(model), "--dataset-name", "random",
            "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT),
            "--random-range-ratio", "0", "--num-prompts", str(requests),
            "--request-rate", str(RATE), "--burstiness", "1e9", "--ignore-eos",
            "--disable-tqdm"]


def tune_cmd(url: str, workload: Path) -> list[str]:
    return [sys.executable, "-c", "import tuner.cli, os, sys; "
            "assert tuner.cli.__file__.startswith(os.getcwd()), tuner.cli.__file__; "
            "sys.argv[0] = 'tune'; tuner.cli.main()", "bench", "--endpoint", url,
            "--workload", str(workload)]


def per_token(cpu100: float, cpu400: float) -> float:
    """CPU ms per streamed token from the difference of 300 requests."""
    return (cpu400 - cpu100) / (300 * OUTPUT) * 1000


def tools(url: str, model: Path, tmp: Path, base: Path) -> None:
    wl = {}
    for n in (100, 400):
        wl[n] = tmp / f"w{n}.json"
        wl[n].write_text(json.dumps(workload_dict(model, n)))
    runs = {
        "vllm bench serve": lambda n: child_cpu(vllm_cmd(url, model, n)),
        f"tune bench at {BASE}": lambda n: child_cpu(tune_cmd(url, wl[n]), base),
        "tune bench now": lambda n: child_cpu(tune_cmd(url, wl[n])),
    }
    got: dict[str, dict[int, list[float]]] = {k: {100: [], 400: []} for k in runs}
    for _ in range(2):  # A, B, C, A, B, C
        for name, go in runs.items():
            for n in (100, 400):
                got[name][n].append(go(n))
    print(f"\nclients as shipped, alternating, 2 rounds: CPU ms per streamed token "
          f"(400 - 100 requests of {OUTPUT} tokens at {RATE:g} req/s)")
    ref = None
    for name, by_n in got.items():
        costs = [per_token(a, b) for a, b in zip(by_n[100], by_n[400], strict=True)]
        mean = sum(costs) / len(costs)
        ref = ref or mean
        print(f"  {name:<24}{mean:>8.4f}   (rounds {', '.join(f'{c:.4f}' for c in costs)})"
              f"   {mean / ref:.2f}x vLLM's")
        if name == "tune bench now":
            print(f"  one core streams about {1000 / mean:,.0f} tokens/s with the shipped "
                  "client")


def parts(url: str, model: Path) -> None:
    """The shipped client with one part swapped, in-process, CPU by process_time."""
    original = Runner._client

    def with_transport(kind: str):  # type: ignore[no-untyped-def]
        def make(self: Runner, pool: int) -> StreamClient:
            spec = self._client_spec(pool)
            return StreamClient(spec.url, model=spec.model, api=spec.api, caps=spec.caps,
                                pool_size=spec.pool_size, timeout_s=spec.timeout_s,
                                temperature=spec.temperature,
                                route=Route(kind))  # type: ignore[arg-type]
        return make

    async def once(n: int) -> float:
        bench = await open_bench(Workload.model_validate(workload_dict(model, n)), url)
        await asyncio.to_thread(lambda: [bench.runner.factory.make(i) for i in range(n)])
        cpu0 = time.process_time()
        await bench.once()
        return time.process_time() - cpu0

    print("\nthe shipped client with one part swapped (in-process, CPU ms per token, "
          "400 - 100 requests):")
    for transport in ("httpx", "aiohttp", "raw"):
        Runner._client = with_transport(transport)  # type: ignore[method-assign]
        for loop_name, run in (("asyncio", asyncio.run), ("uvloop", run_loop)):
            c100 = run(once(100))
            c400 = run(once(400))
            print(f"  transport {transport:<8} loop {loop_name:<8}{per_token(c100, c400):>8.4f}")
    Runner._client = original  # type: ignore[method-assign]


def scaling(url: str, model: Path) -> None:
    """One and two client processes at rising constant rates (16 tokens per response): the
    sends' p99 lateness and the tokens per second streamed. On this 2-core machine the server
    has core 0 and the clients core 1, so two workers share one core: the figures show the
    mechanism and its overhead, not a second core's gain."""
    print("\nworkers at rising rates (3 s each, 16 tokens per response, clients on core 1):")
    print(f"{'workers':>8}{'rate':>8}{'sent':>7}{'p50 late ms':>13}{'p99 late ms':>13}"
          f"{'tokens/s':>10}{'client CPU':>12}  saturated")
    for workers in (1, 2):
        for rate in (100, 200, 400, 800):
            w = Workload.model_validate({
                **workload_dict(model, 1), "stop": {"duration_s": 3},
                "classes": [{"name": "fixed", "weight": 1,
                             "input": {"dist": "fixed", "value": INPUT},
                             "output": {"dist": "fixed", "value": 16}}],
                "arrival": {"process": "constant", "rate": rate}})

            async def go(w: Workload = w, workers: int = workers) -> tuple[object, float]:
                bench = await open_bench(w, url, workers=workers)
                try:
                    summary = await bench.once()
                    return summary, sum(r.generated for r in bench.records if r.ok)
                finally:
                    bench.close()

            summary, tokens = run_loop(go())
            s = summary  # type: ignore[assignment]
            late = s.dispatch_lag_ms  # type: ignore[attr-defined]
            print(f"{workers:>8}{rate:>8}{s.requests:>7}{late.p50:>13.2f}{late.p99:>13.2f}"  # type: ignore[attr-defined]
                  f"{tokens / s.duration_s:>10.0f}{s.client_cpu:>12.2f}  "  # type: ignore[attr-defined]
                  f"{s.client_saturated or '-'}")  # type: ignore[attr-defined]


def parsers() -> None:
    event = (b'{"id":"cmpl-1","object":"text_completion","created":1,"model":"tiny-llama",'
             b'"choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}],'
             b'"usage":{"prompt_tokens":32,"total_tokens":40,"completion_tokens":8}}')
    n = 100_000
    print("\nparsing one vLLM event (us):")
    for name, fn in (("json", json.loads), ("orjson", orjson.loads),
                     ("msgspec", msgspec.json.decode)):
        t = timeit.timeit(lambda fn=fn: fn(event), number=n) / n * 1e6
        print(f"  {name:<8}{t:>8.2f}")


def main() -> None:
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    print(f"machine: {machine()}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"commit: {head}")
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-m", "tests.sse_server",
                               str(port), "0.005"], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), BASE], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            time.sleep(1)
            os.sched_setaffinity(0, {1})
            tools(url, model, Path(tmp), base)
            parts(url, model)
            scaling(url, model)
            parsers()
        finally:
            server.terminate()
            server.wait()
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           check=False, capture_output=True)


if __name__ == "__main__":
    main()
