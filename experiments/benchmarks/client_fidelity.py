"""The client's own delay per streamed chunk, against the server's clock (issue 37, item 4).

A stub server (tests/sse_server.py with ``clock``, one process on core 0) notes when it wrote
each event, on the machine's monotonic clock (``time.perf_counter_ns``: CLOCK_MONOTONIC, the
same in every process here). The client (``tune bench``'s runner, in this process, on core 1,
one worker, its default transport unless ``--transport``) records when each network read
arrived on the same clock. For every read, its arrival minus the write time of the last event
it carried is the client's own delay: the kernel's loopback, the event loop's wake-up, the
transport and the reader, nothing of the server. Reads are matched to writes by the tokens
counted so far (the stub writes one token per event), requests to their writes by the sha1
of the prompt.

Rates: 20, 200 and 1000 req/s (16 tokens per response, events 5 ms apart; 128 tokens at 20
req/s as well), each for ``--duration`` seconds. Target (issue 37): p99 <= 1 ms at 200 req/s.

Run: .venv/bin/python experiments/benchmarks/client_fidelity.py [--duration 10] [--transport T]
Output kept in client_fidelity.txt next to this file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tuner.core import Settings
from tuner.host import cpu_identity
from tuner.launch import free_port
from tuner.loadgen import RequestRecord, StreamClient, route_for, run_loop
from tuner.measurement import open_bench
from tuner.models import SERVED_NAME, make_model
from tuner.workload import PlannedRequest, Workload

ROOT = Path(__file__).resolve().parents[2]
INPUT = 32
RUNS = ((20, 128), (20, 16), (200, 16), (1000, 16))


def workload(model: Path, rate: float, output: int, duration_s: float) -> Workload:
    return Workload.model_validate({
        "model": SERVED_NAME, "tokenizer": str(model),
        "classes": [{"name": "fixed", "weight": 1, "input": {"dist": "fixed", "value": INPUT},
                     "output": {"dist": "fixed", "value": output}}],
        "arrival": {"process": "constant", "rate": rate}, "stop": {"duration_s": duration_s},
        "seed": 1, "slo": {"ttft_p95_ms": 60000, "itl_p95_ms": 60000, "max_error_rate": 1},
        "cost": {"usd_per_hour": 1.0}})


Sent = list[tuple[str, int, RequestRecord]]
"""Each request's prompt key, the absolute time its run's clock started, and its record."""


def capture_sends(sent: Sent) -> Callable[[], None]:
    """Wrap StreamClient.send so that each request's prompt and clock start are kept; returns
    the undo."""
    original = StreamClient.send

    def send(self: StreamClient, req: PlannedRequest, rec: RequestRecord, t0_ns: int
             ) -> Awaitable[None]:
        key = hashlib.sha1(str(req.prompt).encode()).hexdigest()
        sent.append((key, t0_ns, rec))
        return original(self, req, rec, t0_ns)

    StreamClient.send = send  # type: ignore[method-assign]

    def undo() -> None:
        StreamClient.send = original  # type: ignore[method-assign]
    return undo


def delays_ms(sent: Sent, writes: dict[str, list[int]]) -> list[float]:
    """Every read's arrival minus the write time of the last event it carried."""
    out = []
    for key, t0, rec in sent:
        written = writes.get(key)
        if not written or not rec.ok:
            continue
        tokens = 0
        for at, n in zip(rec.chunk_ns, rec.chunk_tokens, strict=True):
            tokens += n
            if 0 < tokens <= len(written):
                out.append((t0 + at - written[tokens - 1]) / 1e6)
    return out


def measure(url: str, model: Path, rate: float, output: int, duration_s: float,
            transport: str | None) -> dict[str, Any]:
    sent: Sent = []

    async def go() -> tuple[Any, dict[str, list[int]]]:
        bench = await open_bench(workload(model, rate, output, duration_s), url, workers=1,
                                 route=route_for(url, transport))
        async with httpx.AsyncClient(trust_env=False) as http:
            (await http.get(f"{url}/writes")).raise_for_status()  # the probe's, forgotten
            undo = capture_sends(sent)
            try:
                summary = await bench.once()
            finally:
                undo()
                bench.close()
            writes = (await http.get(f"{url}/writes")).json()
        return summary, writes

    summary, writes = run_loop(go())
    got = np.array(delays_ms(sent, writes))
    return {"rate": rate, "output": output, "requests": summary.requests,
            "ok": sum(1 for _, _, r in sent if r.ok), "reads": len(got),
            "p50": float(np.percentile(got, 50)) if len(got) else float("nan"),
            "p99": float(np.percentile(got, 99)) if len(got) else float("nan"),
            "max": float(got.max()) if len(got) else float("nan"),
            "saturated": summary.client_saturated}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--transport", default=None)
    args = parser.parse_args()
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"machine: {cpu_identity()}; python {sys.version.split()[0]}; commit {head}")
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-m", "tests.sse_server",
                               str(port), "0.005", "clock"], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    os.sched_setaffinity(0, {1})
    try:
        time.sleep(1)
        route = route_for(url, args.transport)
        print(f"client: {route.describe()}, one worker on core 1; stub on core 0; "
              f"{args.duration:g} s per rate")
        print(f"{'req/s':>7}{'tokens':>8}{'requests':>10}{'ok':>6}{'reads':>8}"
              f"{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  client saturated")
        for rate, output in RUNS:
            row = measure(url, model, rate, output, args.duration, args.transport)
            print(f"{row['rate']:>7}{row['output']:>8}{row['requests']:>10}{row['ok']:>6}"
                  f"{row['reads']:>8}{row['p50']:>9.3f}{row['p99']:>9.3f}{row['max']:>9.3f}"
                  f"  {row['saturated'] or '-'}", flush=True)
        print("target: p99 <= 1 ms at 200 req/s")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
