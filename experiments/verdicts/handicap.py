"""A handicap of known size for one side of a paired comparison (issue 35's positive control
near the resolution): while an engine process whose command line holds ``--marker`` runs, its
whole process tree (API server, engine core, OpenMP workers) is paused for ``--duty`` of every
period (SIGSTOP, then SIGCONT), so that engine has ``1 - duty`` of the wall clock on every core
it uses. The other side's starts, whose command line lacks the marker, run untouched, so
`tune measure --config X --against defaults`, X marked, must find X worse.

    PYTHONPATH=. .venv/bin/python experiments/verdicts/handicap.py \
        --marker='--max-num-seqs 128' --duty 0.15 &

A first version took a share of the engine's OpenMP core with a busy loop instead: on the
tiny model that core has slack (the API server's core binds), and the capacities showed no
loss (results/handicap.txt). Pausing the whole tree handicaps whatever binds. It runs at a
real-time priority so that its pauses keep their length on a busy machine; on SIGTERM or
SIGINT it resumes every process it paused and prints the share of time they were paused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path


def marked(marker: str) -> int | None:
    """The pid of a running vLLM process whose command line holds ``marker``, if any."""
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


def tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(proc.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--marker", required=True, help="text in the handicapped engine's command")
    ap.add_argument("--duty", type=float, default=0.15, help="share of the time it is paused")
    ap.add_argument("--period-ms", type=float, default=20.0)
    args = ap.parse_args()
    if not 0 < args.duty < 1:
        sys.exit(f"--duty {args.duty}: give a share between 0 and 1")
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except PermissionError:
        print("handicap: no real-time priority (needs root); pauses may run long", flush=True)
    period = args.period_ms / 1000
    paused_s = beside_s = 0.0
    engines = 0
    pids: list[int] = []

    def report(*_: object) -> None:
        signal_all(pids, signal.SIGCONT)
        share = paused_s / beside_s if beside_s else 0.0
        print(f"handicap: paused {paused_s:.1f} s of {beside_s:.1f} s beside {engines} marked "
              f"engine start(s): {share:.1%} of the time (asked {args.duty:.0%})", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, report)
    signal.signal(signal.SIGINT, report)
    current: int | None = None
    checked = 0.0
    while True:
        now = time.monotonic()
        if now - checked > 1.0:  # a new start, or new processes in this one's tree
            pid = marked(args.marker)
            checked = now
            if pid is not None and pid != current:
                engines += 1
                print(f"handicap: engine {pid} marked; paused {args.duty:.0%} of the time",
                      flush=True)
            current = pid
            pids = tree(pid) if pid is not None else []
        if current is None:
            time.sleep(0.5)
            continue
        t0 = time.monotonic()
        signal_all(pids, signal.SIGSTOP)
        time.sleep(args.duty * period)
        signal_all(pids, signal.SIGCONT)
        t1 = time.monotonic()
        time.sleep(max(0.0, period - (t1 - t0)))
        paused_s += t1 - t0
        beside_s += time.monotonic() - t0


if __name__ == "__main__":
    main()
