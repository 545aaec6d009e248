"""Does the load generator stay flat over a long run? Memory and CPU per token over 30 minutes.

`tune bench` (on core 1) sends a constant 20 req/s of 32 tokens in and 128 out for
``--minutes`` to the stub (tests/sse_server.py, plain OpenAI-style events 5 ms apart, on
core 0), and writes its records (``--json``). Every 10 s this script reads the client's
resident memory and CPU time (user + system), summed over its process tree (psutil). Then:
- memory: the resident set one minute in (imports, tokenizer and plan made, the run under
  way) against its largest later; target (issue 37): it grows by less than 50 MB. The
  largest is read two ways: the 10-s samples, and the client's own high-water mark
  (``VmHWM``, reset one minute in through ``/proc/PID/clear_refs`` and printed by the client
  as it exits), which also sees the seconds at the end when the run's figures are made;
- CPU per token: the CPU of a 5-minute window a minute after the start and of one ending a
  minute before the end, each divided by the output tokens whose stream ended in it (from
  the records); target: the last within 10% of the first. Each sample also reads the
  client's system time and minor page faults, and core 1's steal time (what the hypervisor
  took from the client's core), to tell the machine's swings from the client's.

Run: .venv/bin/python experiments/benchmarks/client_flat.py [--minutes 30] [--stub plain]
Output kept in client_flat-*.txt next to this file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tuner.core import Settings
from tuner.launch import free_port
from tuner.loadgen import read_records_csv
from tuner.models import SERVED_NAME, make_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_cost import ROOT, machine, start_stub, tune_cmd, workload_dict  # noqa: E402

MB = 2**20
PEAK = ("import atexit, sys\n"
        "def _peak():\n"
        "    with open('/proc/self/status') as fh:\n"
        "        print('peak ' + next(l for l in fh if l.startswith('VmHWM:')).split()[1],"
        " file=sys.stderr)\n"
        "atexit.register(_peak)\n")
"""Prepended to the client's code: its high-water mark (kB) on stderr as it exits."""
WINDOW_S = 300.0
LEAD_S = 8.0
"""Launch to the first send, roughly (imports, the tokenizer, the plan)."""


def tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@dataclass(frozen=True)
class Sample:
    """One 10-s reading of the client's process tree, and of its core's steal time."""

    t: float
    """Seconds since launch."""
    rss: float
    cpu: float
    """User + system seconds."""
    system: float
    faults: int
    """Minor page faults (each a page the kernel had to map, zeroed, for the first time)."""
    steal: float
    """Seconds the hypervisor ran something else while core 1 wanted to run (0: not a VM)."""


def minor_faults(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])  # the 10th field of the line: minflt


def sample(proc: psutil.Process, t: float) -> Sample | None:
    """The process tree's figures now, or None once it has gone."""
    rss = cpu = system = 0.0
    faults = 0
    for p in tree(proc):
        try:
            rss += p.memory_info().rss
            times = p.cpu_times()
            cpu += times.user + times.system
            system += times.system
            faults += minor_faults(p.pid)
        except (psutil.NoSuchProcess, FileNotFoundError, ProcessLookupError):
            continue
    steal = float(getattr(psutil.cpu_times(percpu=True)[1], "steal", 0.0))
    return Sample(t, rss, cpu, system, faults, steal) if rss else None


def busy() -> str:
    """The machine's load average and CPU pressure (tasks kept waiting for a CPU, last 10 s)."""
    load = Path("/proc/loadavg").read_text().split()[0]
    pressure = Path("/proc/pressure/cpu")
    waiting = (pressure.read_text().split()[1].split("=")[1] + "%" if pressure.exists()
               else "n/a")
    return f"load {load}, CPU pressure {waiting}"


def at(series: list[Sample], t: float) -> Sample:
    """The sample nearest ``t`` seconds."""
    return min(series, key=lambda s: abs(s.t - t))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--stub", choices=("plain", "usage"), default="plain")
    args = parser.parse_args()
    duration = args.minutes * 60
    model = make_model(Settings().cache_dir / "models" / SERVED_NAME)
    print(f"machine: {machine()}")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"commit: {head}; stub {args.stub}; tune bench on core 1 at 20 req/s constant, "
          f"32 tokens in, 128 out, {args.minutes:g} min; samples every 10 s", flush=True)
    port = free_port()
    server = start_stub(port, args.stub)
    with tempfile.TemporaryDirectory() as tmp:
        wl = Path(tmp) / "w.json"
        spec = workload_dict(model, 1)
        spec["stop"] = {"duration_s": duration}
        wl.write_text(json.dumps(spec))
        out = Path(tmp) / "out.json"
        cmd = ["taskset", "-c", "1", *tune_cmd(f"http://127.0.0.1:{port}", wl),
               "--json", str(out)]
        cmd[5] = PEAK + cmd[5]  # taskset -c 1 python -c CODE ...
        series: list[Sample] = []
        try:
            client = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
            proc = psutil.Process(client.pid)
            t0 = time.monotonic()
            hwm_base: float | None = None  # resident bytes when the high-water mark was reset
            while client.poll() is None:
                got = sample(proc, time.monotonic() - t0)
                if got is not None:
                    series.append(got)
                    if hwm_base is None and got.t >= 60:
                        Path(f"/proc/{client.pid}/clear_refs").write_text("5")
                        hwm_base = got.rss
                    if len(series) % 30 == 0:
                        print(f"  {got.t / 60:5.1f} min: {got.rss / MB:7.1f} MB, {got.cpu:7.1f} s "
                              f"CPU ({got.system:.1f} system), {got.faults} page faults, "
                              f"core 1 steal {got.steal:.1f} s since boot; {busy()}", flush=True)
                time.sleep(10)
            stderr = client.stderr.read() if client.stderr else ""
        finally:
            server.terminate()
            server.wait()
        if client.returncode != 0:
            raise SystemExit(f"tune bench exited {client.returncode}: {stderr[-2000:]}")
        records = read_records_csv(out.with_suffix(".records.csv"))
    # Two clocks: the samples' (seconds since launch) and the records' (from the run's start,
    # a few seconds after launch: imports, tokenizer, plan). At a constant rate the tokens in a
    # 5-minute window do not depend on where it falls inside the run, so the windows are kept
    # a minute away from the run's ends and ``LEAD_S`` only has to be roughly right.
    sent0 = min(r.sent_ns for r in records)
    first = (60.0, 60.0 + WINDOW_S)
    last = (LEAD_S + duration - 60.0 - WINDOW_S, LEAD_S + duration - 60.0)

    def tokens(window: tuple[float, float]) -> int:
        lo, hi = ((w - LEAD_S) * 1e9 + sent0 for w in window)
        return sum(r.generated for r in records if r.ok and r.done_ns is not None
                   and lo <= r.done_ns < hi)

    rows = []
    for name, (lo, hi) in (("first 5 min", first), ("last 5 min", last)):
        a, b = at(series, lo), at(series, hi)
        cpu = b.cpu - a.cpu
        n = tokens((lo, hi))
        rows.append((name, cpu, n, cpu / n * 1000 if n else float("nan")))
        print(f"  {name}: {cpu:.1f} s CPU ({b.system - a.system:.1f} system), {n} tokens, "
              f"{rows[-1][3]:.4f} ms per token; {b.faults - a.faults} page faults; core 1 "
              f"stolen by the hypervisor {b.steal - a.steal:.1f} s")
    ratio = rows[1][3] / rows[0][3]
    print(f"  CPU per token, last / first: {ratio:.3f}  target within 10%: "
          + ("met" if abs(ratio - 1) <= 0.10 else "MISSED"))
    base = at(series, 60).rss
    peak = max(s.rss for s in series if s.t >= 60)
    starts = range(60, int(LEAD_S + duration - WINDOW_S), int(WINDOW_S))
    print("  CPU of each 5 minutes from 1 min: " + ", ".join(
        f"{at(series, t + WINDOW_S).cpu - at(series, t).cpu:.1f}" for t in starts) + " s")
    print(f"  resident memory at 1 min {base / MB:.1f} MB, largest sample after {peak / MB:.1f} "
          f"MB, at the end {series[-1].rss / MB:.1f} MB: grew {(peak - base) / MB:.1f} MB")
    hwm = [int(line.split()[1]) * 1024 for line in stderr.splitlines()
           if line.startswith("peak ")]
    if hwm and hwm_base is not None:
        grew = hwm[0] - hwm_base
        print(f"  client's high-water mark from 1 min {hwm[0] / MB:.1f} MB (VmHWM, the figures' "
              f"work at the end included): grew {grew / MB:.1f} MB  target < 50 MB: "
              + ("met" if grew < 50 * MB else "MISSED"))
    else:
        print("  client's high-water mark: not printed (no /proc here)")
    ok = sum(r.ok for r in records)
    print(f"  requests: {len(records)} sent, {ok} ok")


if __name__ == "__main__":
    main()
