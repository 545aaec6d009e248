"""Does a workload fitted to a log load a server like the log itself? Measured on vLLM CPU.

1. `make_log.py` draws a request log (a Mooncake trace) from a known workload.
2. `tune workload fit --from log.jsonl` fits a workload to it (fitted.yaml, its report).
3. The log replayed as a trace (`original.yaml`, its exact send times, lengths and prefix
   blocks) and the fitted workload (same duration; round n samples its traffic with seed n,
   since the log is one draw of its process and the fitted workload is the process) are each
   run by `tune bench` against a vLLM started fresh for every run (the engine's defaults,
   prefix caching on, so no run finds another's prompts cached), in the order original,
   fitted, original, fitted, ...: output-token throughput and p95 TTFT side by side, with the
   original-vs-original spread as the server's noise and the spread over the fitted
   workload's seeds as the sampling noise of one log's length.

With --draws, each round also replays another log drawn from the same known workload
(`make_log.py --seed n`) as a trace ("drawn n"): the spread of the known process over logs,
so that the fitted workload can be held against the process the log came from as well as
against the one log (is a gap fit error, or a calm or busy log?).

Run (from the repository root, after `bash .ci/setup`; about 3 minutes a run on 2 cores):
    .venv/bin/python experiments/workload-fit/run.py [--rounds 5] [--draws] [--duration 150]
        [--out DIR]
It prints the table kept in results/run-N.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from tuner.engines import load_engine_spec
from tuner.launch import LaunchRequest, ProcessLauncher, wait_ready

HERE = Path(__file__).parent
MODEL = Path.home() / ".cache" / "tuner" / "models" / "tiny-llama"
SERVED = "tiny-llama"
SLO = {"ttft_p95_ms": 2000, "itl_p95_ms": 200, "max_error_rate": 0.01}
COST = {"usd_per_hour": 0.10}
WARMUP = {"requests": 3}


def machine() -> str:
    info = Path("/proc/cpuinfo").read_text()
    name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                 if ln.startswith("model name")), platform.processor())
    flags = [f for f in ("avx512f", "avx2", "amx_tile") if f in info.split()]
    return f"{name}, {os.cpu_count()} cores, {'+'.join(flags) or 'no avx2'}"


def tune(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, check=True,
                   env={**os.environ, "COLUMNS": "100"})


def trace_workload(out: Path, name: str, duration_s: float, seed: int | None = None
                   ) -> tuple[Path, float]:
    """A log of ``duration_s`` drawn by make_log.py (its default seed, or ``seed``) and the
    workload that replays it as a trace; the log's duration."""
    log = out / f"{name}.jsonl"
    subprocess.run([sys.executable, str(HERE / "make_log.py"), "--out", str(log),
                    "--duration", str(duration_s),
                    *(["--seed", str(seed)] if seed is not None else [])], check=True)
    stamps = [json.loads(line)["timestamp"] for line in log.read_text().splitlines()]
    span_s = (stamps[-1] - stamps[0]) / 1000
    workload = {"name": name, "model": SERVED, "tokenizer": str(MODEL), "api": "completions",
                "arrival": {"process": "trace", "file": log.name, "block_tokens": 512},
                "stop": {"duration_s": round(span_s + 1, 1)}, "warmup": WARMUP, "seed": 1,
                "slo": SLO, "cost": COST}
    (out / f"{name}.yaml").write_text(yaml.safe_dump(workload, sort_keys=False))
    return out / f"{name}.yaml", span_s


def prepare(out: Path, duration_s: float) -> tuple[Path, Path, float]:
    """The trace workload of the log, the workload fitted to it; the log's duration."""
    out.mkdir(parents=True, exist_ok=True)
    original, span_s = trace_workload(out, "original", duration_s)
    tune("workload", "fit", "--from", "original.jsonl", "--out", "fitted.yaml", cwd=out)
    fitted = yaml.safe_load((out / "fitted.yaml").read_text())
    fitted.update(tokenizer=str(MODEL), slo=SLO, cost=COST, warmup=WARMUP, seed=1,
                  stop={"duration_s": round(span_s, 1)})
    (out / "fitted.yaml").write_text(yaml.safe_dump(fitted, sort_keys=False))
    return original, out / "fitted.yaml", span_s


def bench(workload: Path, result: Path) -> dict[str, Any]:
    """One `tune bench` of ``workload`` on a freshly started vLLM; its summary."""
    spec = load_engine_spec("vllm")
    handle = ProcessLauncher().start(LaunchRequest(
        spec=spec, config={}, model=str(MODEL), served_name=SERVED,
        log_path=result.with_suffix(".vllm.log")))
    try:
        wait_ready(handle, spec, SERVED, timeout_s=600)
        with result.with_suffix(".txt").open("w") as log:
            subprocess.run([sys.executable, "-m", "tuner", "bench", "--endpoint",
                            handle.base_url, "--workload", str(workload), "--json",
                            str(result)], cwd=workload.parent, check=True, stdout=log,
                           stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "100"})
    finally:
        handle.stop()
    summary: dict[str, Any] = json.loads(result.read_text())["result"]
    return summary


def ratio_interval(base: list[float], other: list[float]) -> tuple[float, float]:
    """95% bootstrap interval of mean(other) / mean(base), rounds (base n, other n) resampled."""
    pairs = np.array([base, other])
    rng = np.random.default_rng(0)
    picks = rng.integers(0, pairs.shape[1], size=(10_000, pairs.shape[1]))
    ratios = pairs[1][picks].mean(axis=1) / pairs[0][picks].mean(axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--draws", action="store_true",
                        help="each round also replays a log drawn with seed n as a trace")
    parser.add_argument("--duration", type=float, default=150.0,
                        help="seconds of log to draw (make_log.py --duration)")
    parser.add_argument("--out", type=Path, default=HERE / "run")
    args = parser.parse_args()
    args.out = args.out.resolve()  # the benches run in it, and name their workload from there
    if args.out.exists():
        shutil.rmtree(args.out)
    original, fitted, span_s = prepare(args.out, args.duration)
    rows: list[tuple[str, dict[str, Any]]] = []
    for n in range(1, args.rounds + 1):
        seeded = args.out / f"fitted-seed{n}.yaml"
        seeded.write_text(yaml.safe_dump({**yaml.safe_load(fitted.read_text()), "seed": n},
                                         sort_keys=False))
        runs = [("original", original), ("fitted", seeded)]
        if args.draws:
            runs.insert(1, ("drawn", trace_workload(args.out, f"drawn-seed{n}", args.duration,
                                                     seed=n)[0]))
        for name, workload in runs:
            rows.append((f"{name} {n}", bench(workload, args.out / f"{name}-{n}.json")))
            print(f"done: {rows[-1][0]}", flush=True)
    vllm = subprocess.run([sys.executable, "-c", "import vllm; print(vllm.__version__)"],
                          capture_output=True, text=True).stdout.strip()
    print(f"machine: {machine()}; vLLM {vllm} (CPU), engine defaults, tiny-llama")
    print(f"log: {span_s:.1f} s, replayed as a trace (original) and as the fitted workload"
          + ("; drawn n: a log drawn from the same known workload with seed n" if args.draws
             else ""))
    print(f"{'run':<12}{'requests':>9}{'req/s':>8}{'out tok/s':>11}{'p95 TTFT ms':>13}"
          f"{'p95 ITL ms':>12}")
    for name, s in rows:
        print(f"{name:<12}{s['completed']:>9}{s['request_throughput']:>8.2f}"
              f"{s['output_token_throughput']:>11.1f}{s['ttft_ms']['p95']:>13.1f}"
              f"{s['itl_ms']['p95']:>12.1f}")
    pairs = [("fitted", "original")]
    if args.draws:
        pairs += [("fitted", "drawn"), ("original", "drawn")]
    for key, label in (("output_token_throughput", "output tokens/s"),
                       (("ttft_ms", "p95"), "p95 TTFT")):
        def value(s: dict[str, Any], key: Any = key) -> float:
            return float(s[key[0]][key[1]] if isinstance(key, tuple) else s[key])
        series = {kind: [value(s) for name, s in rows if name.split()[0] == kind]
                  for kind in ("original", "drawn", "fitted")}
        spreads = "; ".join(
            f"{kind} {(max(v) - min(v)) / (sum(v) / len(v)):.1%} (median {np.median(v):.1f})"
            for kind, v in series.items() if v)
        print(f"{label}: spread over runs (max-min)/mean: {spreads}")
        for top, bottom in pairs:
            a, b = series[bottom], series[top]
            low, high = ratio_interval(a, b)
            print(f"  {top}/{bottom} {sum(b) / len(b) / (sum(a) / len(a)):.3f} (means of "
                  f"{len(b)} and {len(a)} runs; 95% bootstrap interval over rounds "
                  f"{low:.3f}-{high:.3f})")


if __name__ == "__main__":
    main()
