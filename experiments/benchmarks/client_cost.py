"""What the load generator costs per streamed token, next to two peers' clients, with intervals.

Servers: tests/sse_server.py (raw asyncio, one process, on core 0): every response streams
``max_tokens`` events 5 ms apart, either shaped as vLLM's with its continuous usage in every
event (stub ``usage``) or as plain OpenAI-style events without usage (stub ``plain``: what
llama-server, TGI, transformers serve and most gateways send), chunked transfer encoding.
Clients, on core 1, at a constant 20 req/s, 32 tokens in and 128 out:
- ``tune bench`` as it is (its default transport; ``--transport`` the others),
- ``tune floor``: tune bench with a reader that only finds each stream's end (``NULL_READER``),
- ``vllm bench serve`` (vLLM's benchmark module, as installed),
- ``aiperf profile`` (aiperf 0.13.0, installed by this script in its own virtual environment
  under ~/.cache/tuner/aiperf-0.13.0; the tokenizer is the tiny model's folder, offline).
CPU per token is the client's user+system CPU over all its processes (``RUSAGE_CHILDREN``),
differenced between runs of 100 and 400 requests so that start-up and imports cancel. The
clients alternate within each round and the order reverses every round (A B C, C B A, ...);
each round gives one ratio of tune bench's cost to each peer's, and the ratio's 95% interval
is over the rounds (t on the log ratios). Target (issue 37): the upper end <= 0.5x of the
cheaper peer, on both stubs.
Then the client's parts, in-process: the transport (raw, aiohttp's, httpx's own) under httpx's
API, asyncio's loop or uvloop's (same records, same run); one and two worker processes at
rising rates; and the JSON parsers on one vLLM event.

Run: .venv/bin/python experiments/benchmarks/client_cost.py [--rounds 5] [--stubs usage,plain]
     [--sections shipped,parts,scaling,parsers]   (shipped: about 1 minute per client, stub
     and round)
Output kept in client_cost.txt next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
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
import psutil
from scipy.stats import t as student_t

from tuner.core import Settings
from tuner.launch import free_port
from tuner.loadgen import (
    Reading,
    RequestRecord,
    Route,
    Runner,
    ServerCaps,
    StreamClient,
    run_loop,
)
from tuner.measurement import open_bench
from tuner.models import SERVED_NAME, make_model
from tuner.workload import Workload

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
    ids = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in
                                               flags.splitlines()[:20])}
    if "cpu family" in ids:
        model += f" family {ids['cpu family']} model {ids.get('model', '?')}"
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


def child_cpu(cmd: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None,
              ok: tuple[int, ...] = (0,)) -> float:
    """CPU seconds (user + system) of one client run to the end (all its processes), on core
    1. ``cwd`` is where ``tuner`` is imported from (``python -c`` puts it first on the path).
    A client that fails (an exit code not in ``ok``) stops the benchmark with its output's
    end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["taskset", "-c", "1", *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode not in ok:
        raise SystemExit(f"{cmd[0]} exited {done.returncode}: {done.stderr[-2000:]}"
                         f"{done.stdout[-1000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vllm_cmd(url: str, model: Path, requests: int) -> list[str]:
    return [sys.executable, "-c", VLLM_BENCH, "--backend", "vllm", "--base-url", url,
            "--model", SERVED_NAME, "--tokenizer", str(model), "--dataset-name", "random",
            "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT),
            "--random-range-ratio", "0", "--num-prompts", str(requests),
            "--request-rate", str(RATE), "--burstiness", "1e9", "--ignore-eos",
            "--disable-tqdm"]


NULL_READER = """
from tuner.loadgen import Reading
def read(self, chunk, now):
    self.rec.done_ns = now
    return chunk.endswith(b"[DONE]\\n\\n")
Reading.read = read
"""
"""The floor: tune bench with a reader that only finds the stream's end (no event split, no
token counted, no read timed). What is left is the process, the loop, the socket's reads and
HTTP parsing: what any client that takes each network read as it arrives pays."""


def tune_cmd(url: str, workload: Path, transport: str | None = None, floor: bool = False
             ) -> list[str]:
    return [sys.executable, "-c", "import tuner.cli, os, sys; "
            "assert tuner.cli.__file__.startswith(os.getcwd()), tuner.cli.__file__; "
            + (f"exec({NULL_READER!r}); " if floor else "")
            + "sys.argv[0] = 'tune'; tuner.cli.main()", "bench", "--endpoint", url,
            "--workload", str(workload), *(["--transport", transport] if transport else [])]


def per_token(cpu100: float, cpu400: float) -> float:
    """CPU ms per streamed token from the difference of 300 requests."""
    return (cpu400 - cpu100) / (300 * OUTPUT) * 1000


AIPERF = "0.13.0"


def aiperf_python() -> Path:
    """aiperf in its own virtual environment (its pins are not vLLM's), made once."""
    venv = Settings().cache_dir / f"aiperf-{AIPERF}"
    python = venv / "bin" / "python"
    if not (venv / "bin" / "aiperf").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"aiperf=={AIPERF}"],
                       check=True)
    return python


HUB_NAME = "tuner/tiny-llama"


def hub_cache(model: Path, home: Path) -> dict[str, str]:
    """The model's tokenizer in a Hugging Face cache layout under ``home`` (aiperf 0.13 loads
    a local tokenizer only from there, offline); the environment that points at it."""
    snapshot = "0" * 40
    repo = home / "hub" / ("models--" + HUB_NAME.replace("/", "--"))
    files = repo / "snapshots" / snapshot
    files.mkdir(parents=True, exist_ok=True)
    for path in model.iterdir():
        if path.suffix == ".json" and not (files / path.name).exists():
            (files / path.name).symlink_to(path)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(snapshot)
    return {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}


def aiperf_cmd(url: str, requests: int, artifacts: Path) -> list[str]:
    return [str(aiperf_python().parent / "aiperf"), "profile", "--model", SERVED_NAME,
            "--url", url, "--endpoint-type", "completions", "--streaming",
            "--tokenizer", HUB_NAME, "--prompt-input-tokens-mean", str(INPUT),
            "--prompt-input-tokens-stddev", "0", "--output-tokens-mean", str(OUTPUT),
            "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
            "--extra-inputs", f"min_tokens:{OUTPUT}", "--request-count", str(requests),
            "--request-rate", str(RATE), "--request-rate-mode", "constant",
            "--ui-type", "none",
            "--artifact-dir", str(artifacts)]


def start_stub(port: int, kind: str) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-m", "tests.sse_server",
                               str(port), "0.005", *(["plain"] if kind == "plain" else [])],
                              cwd=ROOT)
    time.sleep(1)
    return server


def ratio_interval(ratios: list[float]) -> tuple[float, float, float]:
    """The geometric mean of per-round ratios and its 95% interval (t on the logs)."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return math.exp(mean), math.nan, math.nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = student_t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def shipped(model: Path, tmp: Path, rounds: int, stubs: list[str], transport: str | None
            ) -> None:
    wl = {}
    for n in (100, 400):
        wl[n] = tmp / f"w{n}.json"
        wl[n].write_text(json.dumps(workload_dict(model, n)))
    env_offline = hub_cache(model, tmp / "hf")
    for kind in stubs:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = start_stub(port, kind)
        runs = {
            "tune bench": lambda n, url=url: child_cpu(tune_cmd(url, wl[n], transport)),
            # exit 3: its records have no tokens, so the run misses its SLOs
            "tune floor": lambda n, url=url: child_cpu(tune_cmd(url, wl[n], transport, True),
                                                       ok=(0, 3)),
            "vllm bench serve": lambda n, url=url: child_cpu(vllm_cmd(url, model, n)),
            "aiperf": lambda n, url=url: child_cpu(
                aiperf_cmd(url, n, tmp / f"aiperf-{time.monotonic_ns()}"),
                env=env_offline),
        }
        cost: dict[str, list[float]] = {name: [] for name in runs}
        print(f"\nstub {kind}: CPU ms per streamed token (400 - 100 requests of {OUTPUT} "
              f"tokens at {RATE:g} req/s), {rounds} rounds, order reversed every round:",
              flush=True)
        try:
            for r in range(rounds):
                order = list(runs) if r % 2 == 0 else list(reversed(runs))
                for name in order:
                    c100, c400 = runs[name](100), runs[name](400)
                    cost[name].append(per_token(c100, c400))
                print(f"  round {r + 1}: " + ", ".join(f"{name} {cost[name][-1]:.4f}"
                                                      for name in runs), flush=True)
        finally:
            server.terminate()
            server.wait()
        for name, costs in cost.items():
            print(f"  {name:<18} mean {sum(costs) / len(costs):.4f}  "
                  f"(rounds {', '.join(f'{c:.4f}' for c in costs)})")
        peers = [name for name in runs if not name.startswith("tune ")]
        cheaper = min(peers, key=lambda name: sum(cost[name]))
        for peer in peers:
            ratio, low, high = ratio_interval(
                [t / p for t, p in zip(cost["tune bench"], cost[peer], strict=True)])
            verdict = ""
            if peer == cheaper:
                verdict = ("  target <= 0.5x of the cheaper peer: "
                           + ("met" if high <= 0.5 else "MISSED"))
            print(f"  tune bench / {peer}: {ratio:.2f}x (95% interval {low:.2f}-{high:.2f})"
                  f"{verdict}")
        floor, low, high = ratio_interval(
            [f / p for f, p in zip(cost["tune floor"], cost[cheaper], strict=True)])
        print(f"  tune floor / {cheaper}: {floor:.2f}x (95% interval {low:.2f}-{high:.2f}): "
              "the loop, the reads and HTTP parsing alone")
        share, low, high = ratio_interval(
            [f / t for f, t in zip(cost["tune floor"], cost["tune bench"], strict=True)])
        print(f"  tune floor / tune bench: {share:.2f}x (95% interval {low:.2f}-{high:.2f})")


def parts(url: str, model: Path, stub: str) -> None:
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

    print(f"\nstub {stub}: the shipped client with one part swapped (in-process, CPU ms per "
          "token, 400 - 100 requests):", flush=True)
    for transport in ("httpx", "aiohttp", "raw"):
        Runner._client = with_transport(transport)  # type: ignore[method-assign]
        for loop_name, run in (("asyncio", asyncio.run), ("uvloop", run_loop)):
            c100 = run(once(100))
            c400 = run(once(400))
            print(f"  transport {transport:<8} loop {loop_name:<8}{per_token(c100, c400):>8.4f}",
                  flush=True)
    Runner._client = original  # type: ignore[method-assign]
    # The floor under the reader (NULL_READER), in-process.
    shipped_read = Reading.read
    exec(NULL_READER)  # noqa: S102 - this file's own text
    try:
        c100, c400 = run_loop(once(100)), run_loop(once(400))
    finally:
        Reading.read = shipped_read  # type: ignore[method-assign]
    print(f"  transport raw      loop uvloop  , reader that only finds the end (the floor)"
          f"{per_token(c100, c400):>8.4f}", flush=True)


STUB_PROCESSES = 2


def scaling(port: int, model: Path, servers: list[subprocess.Popen[bytes]]) -> None:
    """One and two client processes at rising constant rates (16 tokens per response): the
    sends' p99 lateness, the tokens per second streamed, and each stub process's CPU share
    over the step (the stub is not the bottleneck while each stays under 80%). On this 2-core
    machine the stubs share core 0 and the clients core 1, so two workers share one core: the
    figures show the mechanism and its overhead, not a second core's gain."""
    url = f"http://127.0.0.1:{port}"
    stubs = [psutil.Process(s.pid) for s in servers]
    print(f"\nworkers at rising rates (3 s each, 16 tokens per response, clients on core 1, "
          f"{len(stubs)} stub processes on core 0):")
    print(f"{'workers':>8}{'rate':>8}{'sent':>7}{'p50 late ms':>13}{'p99 late ms':>13}"
          f"{'tokens/s':>10}{'client CPU':>12}{'stub CPU':>14}  saturated")
    best: dict[int, tuple[float, float]] = {}
    for workers in (1, 2):
        for rate in (100, 200, 400, 800, 1000):
            w = Workload.model_validate({
                **workload_dict(model, 1), "stop": {"duration_s": 3},
                "classes": [{"name": "fixed", "weight": 1,
                             "input": {"dist": "fixed", "value": INPUT},
                             "output": {"dist": "fixed", "value": 16}}],
                "arrival": {"process": "constant", "rate": rate}})

            async def go(w: Workload = w, workers: int = workers) -> tuple[object, float,
                                                                           list[float]]:
                bench = await open_bench(w, url, workers=workers)
                try:
                    for p in stubs:
                        p.cpu_percent(None)
                    summary = await bench.once()
                    shares = [p.cpu_percent(None) for p in stubs]
                    return summary, sum(r.generated for r in bench.records if r.ok), shares
                finally:
                    bench.close()

            summary, tokens, shares = run_loop(go())
            s = summary  # type: ignore[assignment]
            late = s.dispatch_lag_ms  # type: ignore[attr-defined]
            rate_tokens = tokens / s.duration_s  # type: ignore[attr-defined]
            stub = "/".join(f"{x:.0f}%" for x in shares)
            print(f"{workers:>8}{rate:>8}{s.requests:>7}{late.p50:>13.2f}{late.p99:>13.2f}"  # type: ignore[attr-defined]
                  f"{rate_tokens:>10.0f}{s.client_cpu:>12.2f}{stub:>14}  "  # type: ignore[attr-defined]
                  f"{s.client_saturated or '-'}", flush=True)  # type: ignore[attr-defined]
            if late.p99 < 1.0 and max(shares) < 80 and not s.client_saturated:  # type: ignore[attr-defined]
                best[workers] = max(best.get(workers, (0.0, 0.0)), (rate_tokens, rate))
    for workers, (tokens_s, rate) in sorted(best.items()):
        print(f"  {workers} worker(s) on one client core: {tokens_s:.0f} tokens/s at {rate} "
              "req/s, the highest rate tried with send p99 < 1 ms and every stub process "
              "under 80%")


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
    # The reader on one network read of one event, as the stubs send them (chunked framing
    # already taken off by the transport), each read a new token of one long stream.
    plain = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"tiny-llama",'
             b'"choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}]}\n\n')
    print("\nthe reader on one network read of one event (us):")
    for name, caps, read in (("usage", ServerCaps(), b"data: " + event + b"\n\n"),
                             ("plain", ServerCaps(continuous_usage=False), plain)):
        rec = RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=32,
                            planned_output_tokens=n, scheduled_ns=0)
        reading = Reading(caps, rec)
        if name == "usage":  # every read's count is one more than the last
            reads = [read.replace(b'"completion_tokens":8', b'"completion_tokens":%d' % i)
                     for i in range(1, n + 1)]
        else:
            reads = [read] * n
        t0 = time.perf_counter()
        for i, chunk in enumerate(reads):
            reading.read(chunk, i)
        t = (time.perf_counter() - t0) / n * 1e6
        print(f"  {name:<8}{t:>8.2f}  ({rec.generated} tokens counted)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stubs", default="usage,plain")
    parser.add_argument("--sections", default="shipped,parts,scaling,parsers")
    parser.add_argument("--transport", help="tune bench's --transport (default: its own)")
    args = parser.parse_args()
    sections = args.sections.split(",")
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    print(f"machine: {machine()}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"commit: {head}")
    os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as tmp:
        if "shipped" in sections:
            shipped(model, Path(tmp), args.rounds, args.stubs.split(","), args.transport)
    for stub in args.stubs.split(",") if "parts" in sections else []:
        port = free_port()
        server = start_stub(port, stub)
        try:
            parts(f"http://127.0.0.1:{port}", model, stub)
        finally:
            server.terminate()
            server.wait()
    if "scaling" in sections:
        port = free_port()
        servers = [start_stub(port, "usage") for _ in range(STUB_PROCESSES)]
        try:
            scaling(port, model, servers)
        finally:
            for server in servers:
                server.terminate()
                server.wait()
    if "parsers" in sections:
        parsers()


if __name__ == "__main__":
    main()
