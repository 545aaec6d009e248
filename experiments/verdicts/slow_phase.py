"""Is a freshly started engine slower for a while, and for how long?

The A/A control's starts fell into two groups (about 63 and 100-127 req/s): in the slow
ones, the steps early in the start (8-64 req/s) had p95 latencies several times those of
the same loads later in the same start. This script starts vLLM CPU as the tuner does
(the command a run recorded), then sends back-to-back steps at one fixed load with
``tune bench`` and prints, per step, the seconds since the server answered, the p95 TTFT
and ITL, and the machine's CPU time in the step (per second, over all cores: user,
nice, system, steal), so a slow phase shows with what the machine was doing meanwhile.

    PYTHONPATH=. .venv/bin/python experiments/verdicts/slow_phase.py --starts 3 --load 64

Needs the tiny model (``tune make-model``) and an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path.home() / ".cache/tuner/models/tiny-llama"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_jiffies() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def thread_times(session: int) -> dict[tuple[str, int], float]:
    """CPU seconds of every thread of the engine's processes (its session), by (process
    name, the core the thread last ran on)."""
    out: dict[tuple[str, int], float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            if int(rest.split()[3]) != session:
                continue
            name = head.split("(", 1)[1]
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                key = (name, int(fields[36]))
                out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return out


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def machine() -> str:
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = " ".join(x for x in ("avx512f", "amx_tile", "avx2")
                                 if x in line.split())
                break
    return f"{name}, {os.cpu_count()} cores, {flags}, python {platform.python_version()}"


def one_start(k: int, load: float, seconds: float, step_s: float, workload: Path,
              cpus: set[int]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = os.environ | {"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_CPU_OMP_THREADS_BIND": "0",
                        "VLLM_USE_AOT_COMPILE": "0"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(MODEL),
           "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(port),
           "--generation-config", "vllm", "--max-num-seqs", "128"]
    log = Path(tempfile.mkdtemp(prefix="slow-phase-")) / "engine.log"
    t0 = time.monotonic()
    def setup() -> None:  # as the tuner starts it: niced, on its cores
        os.sched_setaffinity(0, cpus)
        os.nice(10)

    with log.open("w") as engine_out:
        engine = subprocess.Popen(cmd, env=env, stdout=engine_out, stderr=subprocess.STDOUT,
                                  start_new_session=True, preexec_fn=setup)
    try:
        while not ready(url):
            if engine.poll() is not None:
                raise SystemExit(f"the engine exited {engine.returncode}; log {log}")
            time.sleep(0.5)
        up = time.monotonic()
        print(f"start {k}: ready after {up - t0:.0f} s", flush=True)
        while time.monotonic() - up < seconds:
            before, t_step = cpu_jiffies(), time.monotonic()
            threads = thread_times(engine.pid)
            with tempfile.TemporaryDirectory() as tmp:
                report = Path(tmp) / "bench.json"
                subprocess.run(["taskset", "-c", "1", "chrt", "-r", "1",  # as the tuner
                                str(ROOT / ".venv/bin/tune"), "bench", "--endpoint", url,
                                "--workload", str(workload), "--load", str(load),
                                "--duration", str(step_s), "--json", str(report)],
                               capture_output=True)  # exit 3: the step failed its SLOs
                s = json.loads(report.read_text())["result"]
            dt = time.monotonic() - t_step
            d = [(b - a) / dt for a, b in zip(before, cpu_jiffies(), strict=True)]
            print(f"  t={t_step - up:5.0f} s  p95 TTFT {s['ttft_ms']['p95']:7.1f} ms  "
                  f"p95 ITL {s['itl_ms']['p95']:6.1f} ms  sent {s['sent_rps']:.1f} req/s  "
                  f"cpu%: user {d[0]:.0f} nice {d[1]:.0f} sys {d[2]:.0f} idle {d[3]:.0f} "
                  f"steal {d[7]:.0f}", flush=True)
            after = thread_times(engine.pid)
            busy = sorted(((v - threads.get(key, 0.0)) / dt, key) for key, v in after.items())
            print("    engine cpu% by process and last core: " + ", ".join(
                f"{name}@{core} {share * 100:.0f}" for share, (name, core) in busy[::-1]
                if share >= 0.03), flush=True)
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        try:
            engine.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(engine.pid, signal.SIGKILL)
            engine.wait()
        log.unlink()
        log.parent.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=3)
    ap.add_argument("--load", type=float, default=64.0)
    ap.add_argument("--seconds", type=float, default=180.0, help="measured per start")
    ap.add_argument("--step", type=float, default=8.0, help="seconds per step")
    ap.add_argument("--engine-cpus", default=None, help="the engine process's cores, e.g. "
                    "'1' (its OMP thread is bound to core 0 all the same); default: all, as "
                    "the tuner starts it")
    ap.add_argument("--workload", type=Path,
                    default=ROOT / "experiments/workloads/quickstart.yaml")
    a = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"load {a.load} req/s in {a.step:.0f}-s steps for {a.seconds:.0f} s after each start")
    cpus = ({int(c) for c in a.engine_cpus.split(",")} if a.engine_cpus
            else set(range(os.cpu_count() or 1)))
    print(f"engine process on cores {sorted(cpus)}, its OMP thread bound to core 0")
    for k in range(a.starts):
        one_start(k, a.load, a.seconds, a.step, a.workload, cpus)


if __name__ == "__main__":
    main()
