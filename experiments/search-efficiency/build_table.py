"""Measure every configuration of a grid with `tune measure`, into a table the replay reads.

Each configuration (and the engine's defaults, first) is started ``--repeats`` times by `tune
measure` on the search-efficiency workload; its costs, capacities, binding SLOs and outcome
become one row of the table (JSON, rewritten after every configuration). Resumable: the rows
already in the table are skipped, so a stopped run goes on where it left off.

Run (from the repository root, after `bash .ci/setup`; hours on 2 cores, in the background):
    .venv/bin/python experiments/search-efficiency/build_table.py --grid \
        experiments/search-efficiency/grid-llamacpp.yaml
A table holds one machine's rows: resumed on another CPU, the script refuses (give a new
--table).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from tuner.host import cpu_identity
from tuner.study import MeasuredTable, TableRow

HERE = Path(__file__).parent


def machine_speed() -> dict[str, float]:
    """The machine's speed now, in under a second: the best of 5 float32 1024x1024 matrix
    products (GFLOP/s) and of 3 copies of 256 MB (GB/s, read and write)."""
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    flops = 0.0
    for _ in range(5):
        t = time.perf_counter()
        a @ a
        flops = max(flops, 2 * 1024**3 / (time.perf_counter() - t) / 1e9)
    b = np.ones(2**25)
    copy = 0.0
    for _ in range(3):
        t = time.perf_counter()
        b.copy()
        copy = max(copy, 2 * b.nbytes / (time.perf_counter() - t) / 1e9)
    return {"matmul_gflops": round(flops, 1), "copy_gb_s": round(copy, 2)}


def measure(engine: str, config: dict[str, Any] | None, workload: Path, model: str,
            repeats: int, out: Path) -> dict[str, Any]:
    """`tune measure` of one configuration (None: the defaults); its measure.json."""
    out.mkdir(parents=True, exist_ok=True)
    chosen = "defaults"
    if config is not None:
        (out / "config.yaml").write_text(yaml.safe_dump(config))
        chosen = str(out / "config.yaml")
    cmd = [sys.executable, "-m", "tuner", "measure", "--engine", engine, "--workload",
           str(workload), "--model", model, "--repeats", str(repeats), "--config", chosen,
           "--out", str(out)]
    with (out / "output.txt").open("w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ, "COLUMNS": "100"})
    found: dict[str, Any] = json.loads(next(out.glob("*/measure.json")).read_text())
    return found


def row_of(report: dict[str, Any], config: dict[str, Any], defaults: bool) -> TableRow:
    runs = report["repeats"]
    ok = [r for r in runs if r.get("cost_per_m_output_tokens") is not None]
    failed = [r["outcome"] for r in runs if r.get("cost_per_m_output_tokens") is None]
    estimate = [(r.get("capacity") or {}).get("estimate") or {} for r in ok]
    return TableRow(
        config=config, outcome="ok" if ok else (failed[0] if failed else "error"),
        costs=[r["cost_per_m_output_tokens"] for r in ok],
        loads=[r["max_load"] for r in ok], binding=[e.get("binding") for e in estimate],
        rejected_before_launch=bool(runs) and all(r["rejected_before_launch"] for r in runs),
        defaults=defaults, measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", type=Path, default=HERE / "grid-llamacpp.yaml")
    parser.add_argument("--workload", type=Path, default=None, help=(
        "the workload (default: the grid's own `workload`, else workload.yaml)"))
    parser.add_argument("--table", type=Path, default=None, help=(
        "the table file (default: table-<engine>.json here)"))
    parser.add_argument("--model", default=str(Path.home() / ".cache/tuner/models/tiny-llama"))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED", help=(
        "measure the configurations left in a seeded random order, so that a table stopped "
        "early is a uniform sample of the grid (default: grid order)"))
    parser.add_argument("--anchor-every", type=int, default=8, metavar="N", help=(
        "measure the defaults again after every N configurations (the table's anchors: how "
        "far the machine drifted while the table was built), and once after the last "
        "configuration"))
    args = parser.parse_args()
    grid = yaml.safe_load(args.grid.read_text())
    engine, knobs = grid["engine"], grid["knobs"]
    workload = args.workload or (args.grid.parent / grid.get("workload", "workload.yaml"))
    path = args.table or HERE / f"table-{engine}.json"
    run_dir = HERE / "run" / path.stem
    here = cpu_identity()
    table = (MeasuredTable.load(path) if path.is_file() else MeasuredTable(
        engine=engine, knobs=knobs, rows=[], workload=str(workload),
        command=" ".join(["python", *sys.argv]), machine=here))
    if table.rows and table.machine != here:
        sys.exit(f"{path}: measured on {table.machine}, this is {here}: its rows and "
                 "this machine's would not compare; give a new --table for this machine")
    done = {json.dumps(table.key(r.config)) for r in table.rows if not r.defaults}
    todo: list[dict[str, Any] | None] = [] if any(r.defaults for r in table.rows) else [None]
    todo += [dict(zip(knobs, values, strict=True)) for values in itertools.product(
        *knobs.values()) if json.dumps(list(values)) not in done]
    if args.shuffle is not None:  # the defaults (None) stay first
        first = [c for c in todo if c is None]
        rest = [c for c in todo if c is not None]
        random.Random(args.shuffle).shuffle(rest)
        todo = first + rest
    print(f"{engine}: {len(table.rows)} rows measured, {len(todo)} to go", flush=True)

    def save() -> None:
        tmp = path.with_suffix(".part")
        tmp.write_text(table.model_dump_json(indent=1) + "\n")
        tmp.replace(path)

    def anchor() -> None:
        """The defaults measured again, into the table's anchors."""
        t0 = time.monotonic()
        speed = machine_speed()
        report = measure(engine, None, workload, args.model, args.repeats,
                         run_dir / f"anchor-{len(table.anchors) + 1}")
        table.anchors.append(row_of(report, report["config"], True))
        table.anchors[-1].machine_speed = speed
        save()
        drift = table.drift()
        print(f"anchor {len(table.anchors)} (the defaults again): "
              f"{', '.join(f'{c:.4g}' for c in table.anchors[-1].costs)}; drift so far "
              f"{'?' if drift is None else f'{drift:.1%}'} "
              f"({time.monotonic() - t0:.0f}s)", flush=True)

    for i, config in enumerate(todo):
        t0 = time.monotonic()
        name = "defaults" if config is None else "-".join(str(v) for v in config.values())
        speed = machine_speed()
        report = measure(engine, config, workload, args.model, args.repeats,
                         run_dir / name)
        row = row_of(report, report["config"] if config is None else config, config is None)
        row.machine_speed = speed
        table.engine_version = report["engine_version"]
        table.rows.append(row)
        save()
        costs = ", ".join(f"{c:.4g}" for c in row.costs) or row.outcome
        print(f"[{i + 1}/{len(todo)}] {name}: {costs} ({time.monotonic() - t0:.0f}s; machine "
              f"{speed['matmul_gflops']:g} GFLOP/s, {speed['copy_gb_s']:g} GB/s)", flush=True)
        configs = sum(not r.defaults for r in table.rows)
        if args.anchor_every > 0 and len(table.anchors) < configs // args.anchor_every:
            anchor()
    last = max((r.measured_at or "" for r in table.rows), default="")
    if args.anchor_every > 0 and table.anchors and last > (table.anchors[-1].measured_at or ""):
        anchor()  # the closing one: the rows after the last anchor have one after them too


if __name__ == "__main__":
    main()
