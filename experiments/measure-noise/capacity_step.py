"""Side by side: the capacity search's last step, coarse (A) against fine (B).

Each round starts the engine's defaults once with each variant of the quickstart workload (A,
B in odd rounds, B, A in even ones, so neither always runs first), with `tune measure
--repeats 1`, and prints each start's capacity, its bracket, whether it was interpolated, its
cost, the steps it took and its wall time; at the end each variant's spread of capacity over
its starts, the resolution its brackets allow and its mean time.

A variant is the quickstart workload with ``capacity.tolerance`` and ``capacity.max_steps``
replaced (``--a 0.15:9 --b 0.05:12``). Only a side-by-side run on one machine compares them.

Run (from the repository root, after `bash .ci/setup`, with the machine to itself):
    .venv/bin/python experiments/measure-noise/capacity_step.py --rounds 3 [--engine vllm]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tuner.host import cpu_identity

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "experiments/workloads/quickstart.yaml"


def variant(spec: str, name: str, folder: Path) -> Path:
    """The quickstart workload with tolerance:max_steps from ``spec``, written to ``folder``."""
    tolerance, steps = spec.split(":")
    data = yaml.safe_load(QUICKSTART.read_text())
    data["capacity"].update(tolerance=float(tolerance), max_steps=int(steps))
    data["name"] = f"quickstart-{name}"
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start(engine: str, workload: Path, model: str, out: Path) -> dict[str, Any]:
    """One fresh start of the defaults; its repeat from measure.json, with its wall time."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "tuner", "measure", "--engine", engine, "--workload",
           str(workload), "--model", model, "--repeats", "1", "--out", str(out)]
    t0 = time.monotonic()
    with (out / "output.txt").open("w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ, "COLUMNS": "100"})
    report = json.loads(next(out.glob("*/measure.json")).read_text())
    rep: dict[str, Any] = report["repeats"][0]
    rep["wall_s"] = time.monotonic() - t0
    return rep


def line(name: str, rep: dict[str, Any]) -> str:
    cap = rep.get("capacity") or {}
    est = cap.get("estimate") or {}
    high = est.get("high")
    cost = rep.get("cost_per_m_output_tokens")
    return (f"{name}: capacity {est.get('load', 0):6.1f} (passed {est.get('low', 0):g}, failed "
            f"{high if high is None else f'{high:g}'}, interpolated {est.get('interpolated')}), "
            f"${cost if cost is None else f'{cost:.6f}'}/M, {len(cap.get('steps', []))} steps, "
            f"{cap.get('stopped_by')}, {rep['wall_s']:.0f} s")


def summary(name: str, spec: str, reps: list[dict[str, Any]]) -> str:
    ests = [(r.get("capacity") or {}).get("estimate") or {} for r in reps]
    loads = [e["load"] for e in ests if e]
    steps = [((e["high"] - e["low"]) / e["low"]) for e in ests
             if e and e.get("high") and not e.get("interpolated")]
    spread = (max(loads) / min(loads) - 1) if loads else float("nan")
    cv = statistics.stdev(loads) / statistics.mean(loads) if len(loads) > 1 else float("nan")
    res = f"{max(steps):.1%}" if steps else "interpolated"
    return (f"{name} (tolerance:max_steps {spec}): capacities {', '.join(f'{x:g}' for x in loads)}"
            f"; spread {spread:.1%}, CV {cv:.1%}; widest bracket not interpolated {res}; mean "
            f"{statistics.mean(len((r.get('capacity') or {}).get('steps', [])) for r in reps):.1f}"
            f" steps, {statistics.mean(r['wall_s'] for r in reps):.0f} s a start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--model", default=str(Path.home() / ".cache/tuner/models/tiny-llama"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--a", default="0.15:9", help="tolerance:max_steps of variant A")
    parser.add_argument("--b", default="0.05:12", help="tolerance:max_steps of variant B")
    parser.add_argument("--out", type=Path, default=ROOT / "experiments/measure-noise/run/step")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    specs = {"A": args.a, "B": args.b}
    paths = {n: variant(s, n, args.out) for n, s in specs.items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {commit}; "
          f"{cpu_identity()}; {args.engine} defaults on the quickstart workload", flush=True)
    done: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for i in range(args.rounds):
        for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
            rep = start(args.engine, paths[name], args.model, args.out / f"{name}-{i}")
            done[name].append(rep)
            print(f"round {i + 1} " + line(name, rep), flush=True)
    for name, spec in specs.items():
        print(summary(name, spec, done[name]), flush=True)


if __name__ == "__main__":
    main()
