"""How late the client wakes for a send after sleeping, with and without the pre-wake.

`tune bench` times each send with ``tuner.loadgen.schedule.sleep_until`` (a timerfd on the
event loop). A process that slept long wakes late, by the machine's own wake-up latency (on a
KVM guest: the host running the halted vCPU again). This measures it the way the client
waits: on uvloop, on core 1 (at real-time priority where allowed, as `tune` runs its
client), for sends a random (exponential) gap apart, the gap's mean from 20 ms to 3.3 s (the
low-load steps' 0.3 req/s), each send's lateness = when the wait returned minus its time.

Two variants, interleaved A B B A in one run: ``prewake`` (what the client does: a wait
longer than PREWAKE_AFTER_NS wakes once PREWAKE_NS early first; until 2026-12-08 02:20 UTC
any wait longer than PREWAKE_NS did, as in idle_wake-f6m167.txt's lateness table) and
``direct`` (one wait on the deadline, what it did before). Nothing else should run on the
machine meanwhile.

Run: PYTHONPATH=. .venv/bin/python experiments/benchmarks/idle_wake.py   (~14 minutes)
     ... idle_wake.py --cpu: what the early wake costs in CPU instead (~2 minutes)
Output kept in idle_wake-<machine>.txt next to this file.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tuner.host import cpu_identity, realtime_allowed, running_on
from tuner.loadgen import PREWAKE_NS, run_loop, sleep_until

ROOT = Path(__file__).resolve().parents[2]
GAPS = ((0.02, 100), (0.1, 40), (1.0, 30), (3.3, 20))
"""(mean gap in s, sends) per round: about 100 s a variant."""
OFF = 10**18


async def cpu_us_per_send(gap_s: float, sends: int, prewake_ns: int) -> float:
    """This process's CPU (user + system) per send, sends ``gap_s`` apart (constant)."""
    t = time.perf_counter_ns()
    cpu0 = time.process_time()
    for _ in range(sends):
        t += int(gap_s * 1e9)
        await sleep_until(t, prewake_ns=prewake_ns)
    return (time.process_time() - cpu0) / sends * 1e6


async def lateness_ms(gap_s: float, sends: int, seed: int, prewake_ns: int) -> list[float]:
    rng = random.Random(seed)
    late = []
    t = time.perf_counter_ns()
    for _ in range(sends):
        t += int(rng.expovariate(1 / gap_s) * 1e9)
        await sleep_until(t, prewake_ns=prewake_ns)
        late.append((time.perf_counter_ns() - t) / 1e6)
    return late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="A B B A pairs (default 2)")
    parser.add_argument("--cpu", action="store_true", help=(
        "instead: the CPU each send's wait costs, 400 sends 50 ms apart (20 req/s, the rate "
        "of client_cost.py) a variant, A B B A (~2 minutes); since waits up to "
        "PREWAKE_AFTER_NS are no longer woken early, both variants now wait the same way "
        "there (the kept figure is from before)"))
    args = parser.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"machine: {cpu_identity()}; python {sys.version.split()[0]}; commit {head}; "
          f"idle driver {_read('/sys/devices/system/cpu/cpuidle/current_driver')}; "
          f"real-time {realtime_allowed()}; PREWAKE_NS {PREWAKE_NS}")
    order = [v for r in range(args.rounds) for v in ("prewake", "direct", "direct", "prewake")]
    if args.cpu:
        costs: dict[str, list[float]] = {"prewake": [], "direct": []}
        with running_on([1], realtime=realtime_allowed()):
            for variant in order:
                prewake = PREWAKE_NS if variant == "prewake" else OFF
                costs[variant].append(run_loop(cpu_us_per_send(0.05, 400, prewake)))
                print(f"  {variant:8} {costs[variant][-1]:7.1f} us of CPU a send", flush=True)
        extra = np.mean(costs["prewake"]) - np.mean(costs["direct"])
        print(f"\nCPU a send, 50 ms apart: direct {np.mean(costs['direct']):.1f} us, prewake "
              f"{np.mean(costs['prewake']):.1f} us; the pre-wake's extra {extra:.1f} us, "
              f"{extra / 128 / 1000:.5f} ms a token at 128 tokens a request")
        return
    got: dict[tuple[str, float], list[float]] = {}
    with running_on([1], realtime=realtime_allowed()):
        for i, variant in enumerate(order):
            prewake = PREWAKE_NS if variant == "prewake" else OFF
            for gap, sends in GAPS:
                late = run_loop(lateness_ms(gap, sends, i * 100 + sends, prewake))
                got.setdefault((variant, gap), []).extend(late)
                print(f"  {variant:8} gap {gap:>4} s: p50 {np.percentile(late, 50):6.2f}  "
                      f"max {max(late):6.2f} ms", flush=True)
    print(f"\nall rounds ({' '.join(order)}), lateness of each send in ms:")
    print(f"{'variant':9}{'mean gap s':>11}{'sends':>7}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}"
          f"{'> 5 ms':>8}")
    for gap, _ in GAPS:
        for variant in ("direct", "prewake"):
            late = np.array(got[(variant, gap)])
            print(f"{variant:9}{gap:>11}{len(late):>7}{np.percentile(late, 50):>8.2f}"
                  f"{np.percentile(late, 90):>8.2f}{np.percentile(late, 99):>8.2f}"
                  f"{late.max():>8.2f}{int((late > 5).sum()):>8}")


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
