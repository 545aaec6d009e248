"""How long `tune make-model --shape NAME` takes, and how long vLLM CPU takes to serve the
result (issue 36's targets: the 360M shape builds in <= 60 s; vLLM serves it on 2 cores and
starts in <= 90 s).

For each shape: `tune make-model --shape NAME DIR` into a fresh folder (timed, wall clock),
the folder's size and what its tuner-recipe.json says of the tokenizer; then vLLM CPU started
on it as the tuner starts it (engine niced, its OpenMP thread bound to core 0, the tuner's
KV cache size), timed until /v1/models answers, one completion streamed, and stopped.

    PYTHONPATH=. .venv/bin/python experiments/headroom/shapes.py smollm2-135m smollm2-360m

Needs an idle machine; prints the machine first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from experiments.verdicts.slow_phase import free_port, machine, ready

ROOT = Path(__file__).resolve().parents[2]
# vLLM's own log lines that say where its start-up went
PHASES = ("took", "Model loading took", "torch.compile take", "Compiling a graph", "Directly load",
          "init engine", "Memory profiling takes", "Starting vLLM API server")


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def complete(url: str, model: str) -> str:
    body = json.dumps({"model": model, "prompt": "def main():", "max_tokens": 16}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return str(json.loads(r.read())["choices"][0]["text"])


def serve(model: Path, name: str, extra: list[str]) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = os.environ | {"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_CPU_OMP_THREADS_BIND": "0"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port),
           "--generation-config", "vllm", *extra]
    log = model / "engine.log"
    t0 = time.monotonic()
    with log.open("w") as out:
        engine = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True, preexec_fn=lambda: os.nice(10))
    try:
        while not ready(url):
            if engine.poll() is not None:
                print(f"  vLLM exited {engine.returncode} after {time.monotonic() - t0:.0f} s;"
                      f" its log's end:\n" + "\n".join(log.read_text().splitlines()[-15:]))
                return
            time.sleep(0.5)
        up = time.monotonic() - t0
        t1 = time.monotonic()
        text = complete(url, name)
        print(f"  vLLM ready after {up:.1f} s; a 16-token completion in "
              f"{time.monotonic() - t1:.2f} s: {text[:40]!r}", flush=True)
        for line in log.read_text().splitlines():
            if any(k in line for k in PHASES):
                print("    " + line.split("] ", 1)[-1][:110], flush=True)
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        try:
            engine.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(engine.pid, signal.SIGKILL)
            engine.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--no-serve", action="store_true", help="build only")
    ap.add_argument("--vllm-args", default="", help="more vLLM flags, in one string")
    ap.add_argument("--starts", type=int, default=1,
                    help="vLLM starts on each folder (a second start finds its compile cache)")
    a = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    for shape in a.shapes:
        with tempfile.TemporaryDirectory(prefix=f"shape-{shape}-") as tmp:
            folder = Path(tmp) / shape
            t0 = time.monotonic()
            done = subprocess.run([str(ROOT / ".venv/bin/tune"), "make-model", str(folder),
                                   "--shape", shape], capture_output=True, text=True)
            took = time.monotonic() - t0
            if done.returncode:
                print(f"{shape}: make-model exited {done.returncode}: {done.stderr.strip()}")
                continue
            recipe = json.loads((folder / "tuner-recipe.json").read_text())
            print(f"{shape}: made in {took:.1f} s, {folder_mib(folder):.0f} MiB; tokenizer: "
                  f"{recipe['tokenizer']['note']}", flush=True)
            for _ in range(0 if a.no_serve else a.starts):
                serve(folder, shape, a.vllm_args.split())


if __name__ == "__main__":
    main()
