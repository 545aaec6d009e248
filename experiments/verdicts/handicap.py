"""A handicap of known size for one side of a paired comparison (issue 35's positive control
near the resolution): while an engine process whose command line holds ``--marker`` runs, a
busy loop pinned to that engine's OpenMP core takes ``--duty`` of it (busy for duty x period,
asleep for the rest). The other side's starts, whose command line lacks the marker, run
untouched, so `tune measure --config X --against defaults`, X marked, must find X worse.

    PYTHONPATH=. .venv/bin/python experiments/verdicts/handicap.py \
        --marker='--max-num-seqs 128' --duty 0.15 &

The core is the engine's VLLM_CPU_OMP_THREADS_BIND (read from the process's environment),
else ``--core``. On SIGTERM or SIGINT it prints how long it was busy beside a marked engine.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def marked(marker: str) -> int | None:
    """The pid of a running process whose command line holds ``marker``, if any."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and "vllm" in cmd:
            return int(proc.name)
    return None


def omp_core(pid: int, fallback: int) -> int:
    """The first core of the engine's VLLM_CPU_OMP_THREADS_BIND (``0``, ``0-3``, ``0,2``)."""
    try:
        env = (Path("/proc") / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return fallback
    for entry in env:
        if entry.startswith(b"VLLM_CPU_OMP_THREADS_BIND="):
            value = entry.split(b"=", 1)[1].decode()
            head = value.split("|")[0].split(",")[0].split("-")[0]
            if head.isdigit():
                return int(head)
    return fallback


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--marker", required=True, help="text in the handicapped engine's command")
    ap.add_argument("--duty", type=float, default=0.15, help="share of the core to take")
    ap.add_argument("--period-ms", type=float, default=20.0)
    ap.add_argument("--core", type=int, default=0, help="when the engine's env does not say")
    args = ap.parse_args()
    if not 0 < args.duty < 1:
        sys.exit(f"--duty {args.duty}: give a share between 0 and 1")
    period = args.period_ms / 1000
    busy_s = beside_s = 0.0
    engines = 0

    def report(*_: object) -> None:
        share = busy_s / beside_s if beside_s else 0.0
        print(f"handicap: busy {busy_s:.1f} s of {beside_s:.1f} s beside {engines} marked "
              f"engine start(s): {share:.1%} of the core (asked {args.duty:.0%})", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, report)
    signal.signal(signal.SIGINT, report)
    current: int | None = None
    checked = 0.0
    while True:
        now = time.monotonic()
        if now - checked > 1.0:
            pid = marked(args.marker)
            checked = now
            if pid is not None and pid != current:
                core = omp_core(pid, args.core)
                os.sched_setaffinity(0, {core})
                engines += 1
                print(f"handicap: engine {pid} marked; busy {args.duty:.0%} of core {core}",
                      flush=True)
            current = pid
        if current is None:
            time.sleep(0.5)
            continue
        t0, cpu0 = time.monotonic(), time.process_time()
        until = t0 + args.duty * period
        while time.monotonic() < until:
            pass
        busy_s += time.process_time() - cpu0  # the CPU it got, not the time it wanted it
        time.sleep(max(0.0, period - (time.monotonic() - t0)))
        beside_s += time.monotonic() - t0


if __name__ == "__main__":
    main()
