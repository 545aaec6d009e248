"""Step 0 of the vLLM demo (PLAN.md): the defaults at low load, which fix the SLO rule's T and I.

Starts vLLM CPU with the engine's defaults exactly as a trial does (the tuner's process
launcher, OpenMP threads on core 0, its API server apart), waits until it serves, then runs
``tune bench`` of ``workload-lowload.yaml`` (0.3 req/s Poisson for 200 s) on core 1 and
writes its output to ``results/lowload.txt`` and ``results/lowload.json`` (``--name
lowload-f23m1`` names them for another machine, which PLAN.md starts again from here;
``--engine llamacpp --workload experiments/headroom/demo/workload-lowload.yaml`` does the same
for llama-server's demo and grid, into that folder's ``results/``; ``--set dtype=float32`` starts
the engine with that knob changed instead of its defaults, a probe outside PLAN.md's steps).

Run: .venv/bin/python experiments/headroom/demo-vllm/lowload.py   (~6 minutes)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from tuner.core import Settings
from tuner.engines import load_engine_spec
from tuner.host import cpu_identity, realtime_allowed, running_on
from tuner.launch import LaunchRequest, ProcessLauncher, wait_ready

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MODEL = Settings().cache_dir / "models" / "smollm2-135m"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="lowload", help="the results' file stem")
    parser.add_argument("--engine", default="vllm",
                        help="vllm, or llamacpp (llama-server demo: experiments/headroom/demo)")
    parser.add_argument("--workload", type=Path, default=HERE / "workload-lowload.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        help="a knob away from the engine's default (YAML value); repeatable")
    args = parser.parse_args()
    config = {k: yaml.safe_load(v) for k, _, v in (item.partition("=") for item in args.set)}
    name = args.name
    spec = load_engine_spec(args.engine)
    results = args.workload.resolve().parent / "results"
    results.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        handle = ProcessLauncher().start(LaunchRequest(
            spec=spec, config=config, model=str(MODEL), served_name="smollm2-135m",
            log_path=Path(tmp) / "vllm.log", cpus="0"))
        try:
            wait_ready(handle, spec, "smollm2-135m", timeout_s=900)
            with running_on([1], realtime=realtime_allowed()):
                done = subprocess.run(
                    [sys.executable, "-m", "tuner", "bench", "--endpoint", handle.base_url,
                     "--workload", str(args.workload),
                     "--json", str(results / f"{name}.json")],
                    cwd=ROOT, capture_output=True, text=True)
        finally:
            handle.stop()
    head = f"machine: {cpu_identity()}\nconfig: {config or 'the defaults'}\n"
    text = head + done.stdout + done.stderr
    (results / f"{name}.txt").write_text(text)
    print(text)
    if done.returncode != 0:
        raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
