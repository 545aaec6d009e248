"""What a `tune bench` run keeps per request: the memory a run adds between its start and its end.

The long-run benchmark (client_flat.py) showed the resident set growing about 2.9 KB a request
over 30 minutes; this one says what that is. `tune bench` runs ``--requests`` requests at a
constant 20 req/s, 32 tokens in and ``--output`` out, against the plain stub
(tests/sse_server.py, on core 0; the client on core 1), with a probe in the client process:
- when the run starts (``gc_paused`` entered: the plan is made, no request is sent) and when
  it ends (its collection about to start): the resident set and Python's allocated blocks;
- with ``--trace``, tracemalloc (3 frames) from launch: the run's largest allocations still
  alive at its end, by where they were made (tracemalloc slows the client several times);
- at the end, glibc's ``malloc_trim(0)``: what the allocator holds but does not use;
- at exit, the largest resident set since the run's start (``VmHWM``, reset at the start
  through ``/proc/self/clear_refs``), the figures' work included.
Two runs of different lengths give the growth a request: (end - start) / requests.

Run: .venv/bin/python experiments/benchmarks/client_memory.py --requests 3000 [--trace]
Output kept in client_memory-*.txt next to this file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_cost import ROOT, machine, start_stub, workload_dict  # noqa: E402

from tuner.core import Settings  # noqa: E402
from tuner.launch import free_port  # noqa: E402
from tuner.models import SERVED_NAME, make_model  # noqa: E402

PROBE = """
import contextlib, ctypes, gc, sys, tracemalloc
import psutil
TRACE = {trace}
if TRACE:
    tracemalloc.start(3)
proc, libc, start = psutil.Process(), ctypes.CDLL("libc.so.6"), []

def mb():
    return proc.memory_info().rss / 2**20

def at_end(phase, info):
    if phase != "start" or info["generation"] != 2 or not gc.get_freeze_count() or not start:
        return
    rss, blocks = mb(), sys.getallocatedblocks()
    if TRACE:
        for st in tracemalloc.take_snapshot().compare_to(start.pop(), "traceback")[:{top}]:
            where = " < ".join(f"{{f.filename.split('/')[-1]}}:{{f.lineno}}"
                               for f in reversed(st.traceback))
            print(f"  kept {{st.size_diff:>9}} B in {{st.count_diff:>6}} blocks: {{where}}",
                  file=sys.stderr)
    start.clear()
    libc.malloc_trim(0)
    print(f"  run end: {{rss:.1f}} MB resident, {{blocks}} blocks; "
          f"after malloc_trim {{mb():.1f}} MB", file=sys.stderr)

gc.callbacks.append(at_end)
import atexit

def peak():
    with open("/proc/self/status") as fh:
        hwm = next(line for line in fh if line.startswith("VmHWM:"))
    print(f"  peak from the run's start: {{int(hwm.split()[1]) / 1024:.1f}} MB resident "
          "(VmHWM: the run's figures included)", file=sys.stderr)

atexit.register(peak)
import tuner.cli
import tuner.loadgen.runner as runner
paused = runner.gc_paused

@contextlib.contextmanager
def probed():
    start.append(tracemalloc.take_snapshot() if TRACE else None)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # the peak resident set starts again from here
    print(f"  run start: {{mb():.1f}} MB resident, {{sys.getallocatedblocks()}} blocks",
          file=sys.stderr)
    with paused():
        yield

runner.gc_paused = probed
sys.argv[0] = "tune"
tuner.cli.main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--output", type=int, default=128)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--top", type=int, default=12, help="allocation sites shown with --trace")
    args = parser.parse_args()
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"machine: {machine()}")
    print(f"commit: {head}; {args.requests} requests at 20 req/s constant, 32 tokens in, "
          f"{args.output} out, plain stub; tracemalloc {'on' if args.trace else 'off'}",
          flush=True)
    port = free_port()
    server = start_stub(port, "plain")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wl = Path(tmp) / "w.json"
            spec = workload_dict(model, args.requests)
            spec["arrival"] = {"process": "constant", "rate": 20}
            spec["classes"][0]["output"] = {"dist": "fixed", "value": args.output}  # type: ignore[index]
            wl.write_text(json.dumps(spec))
            done = subprocess.run(
                ["taskset", "-c", "1", sys.executable, "-c",
                 PROBE.format(trace=args.trace, top=args.top),
                 "bench", "--endpoint", f"http://127.0.0.1:{port}", "--workload", str(wl)],
                cwd=ROOT, capture_output=True, text=True)
    finally:
        server.terminate()
        server.wait()
    print("\n".join(line for line in done.stderr.splitlines() if line.startswith("  ")))
    if done.returncode != 0:
        raise SystemExit(f"tune bench exited {done.returncode}: {done.stderr[-2000:]}")


if __name__ == "__main__":
    main()
