"""Where the load generator's CPU goes: py-spy over a whole `tune bench` run against the stub.

The stub (tests/sse_server.py, on core 0) streams 128 events 5 ms apart per request, with
vLLM's continuous usage in every event (``usage``) or as plain OpenAI-style events
(``plain``); `tune bench` (on core 1) sends 400 requests of 32 tokens in at 20 req/s, as
client_cost.py's long run does. py-spy samples the whole process (and its children) 250
times a second, idle samples left out, and the samples are summed by function: its own
samples (the leaf of the stack) and its inclusive share (anywhere on the stack), as a share
of all busy samples. The table shows where a per-token or per-request cost sits.

Needs py-spy (`.venv/bin/pip install py-spy`; root, or ptrace allowed).

Run: .venv/bin/python experiments/benchmarks/client_profile.py [--stub plain|usage]
     [--requests 400] [--top 25] [--keep FILE]   (about 30 s)
Output kept in client_profile-*.txt next to this file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tuner.core import Settings
from tuner.launch import free_port
from tuner.models import SERVED_NAME, make_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_cost import machine, start_stub, tune_cmd, workload_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def profile(stub: str, requests: int, out: Path, transport: str | None, native: bool
            ) -> Path:
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_stub(port, stub)
    try:
        wl = out.parent / "workload.json"
        wl.write_text(json.dumps(workload_dict(model, requests)))
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        cmd = [spy, "record", "--format", "raw", "--rate", "250", "--subprocesses",
               *(["--native"] if native else []), "--output", str(out), "--",
               "taskset", "-c", "1", *tune_cmd(url, wl, transport)]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"py-spy exited {done.returncode}: {done.stderr[-2000:]}")
    finally:
        server.terminate()
        server.wait()
    return out


def frame_name(frame: str) -> str:
    """``function (path/to/file.py:line)`` as ``file.py:function``, lines dropped."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0].rstrip(")")
    return f"{Path(path).name}:{name}" if path else name


def summarise(raw: Path, top: int) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    files: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith("process ")]
        if not frames:
            continue
        total += n
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
        files[frames[-1].split(":", 1)[0]] += n
    print(f"busy samples: {total}")
    print(f"\nown time (the function at the stack's leaf), top {top}:")
    for name, n in own.most_common(top):
        print(f"  {100 * n / total:6.1f}%  {name}")
    print(f"\ninclusive time (anywhere on the stack), top {top}:")
    for name, n in inclusive.most_common(top):
        print(f"  {100 * n / total:6.1f}%  {name}")
    print("\nown time by file, top 15:")
    for name, n in files.most_common(15):
        print(f"  {100 * n / total:6.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stub", choices=("plain", "usage"), default="plain")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--transport", help="tune bench's --transport (default: its own)")
    parser.add_argument("--keep", type=Path, help="keep py-spy's raw stacks here")
    parser.add_argument("--native", action="store_true",
                        help="C frames too (uvloop, httptools, orjson, the kernel's calls)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"commit: {head}; stub {args.stub}; {args.requests} requests of 128 tokens at "
          f"20 req/s; tune bench on core 1, stub on core 0")
    with tempfile.TemporaryDirectory() as tmp:
        raw = profile(args.stub, args.requests, Path(tmp) / "stacks.txt", args.transport,
                      args.native)
        summarise(raw, args.top)
        if args.keep:
            shutil.copy(raw, args.keep)


if __name__ == "__main__":
    main()
