"""Measure every configuration of a grid with `tune measure`, into a table the replay reads.

Each configuration (and the engine's defaults, first) is started ``--repeats`` times by `tune
measure` on the search-efficiency workload; its costs, capacities, binding SLOs and outcome
become one row of the table (JSON, rewritten after every configuration). Resumable: the rows
already in the table are skipped, so a stopped run goes on where it left off.

Run (from the repository root, after `bash .ci/setup`; hours on 2 cores, in the background):
    .venv/bin/python experiments/search-efficiency/build_table.py --grid \
        experiments/search-efficiency/grid-llamacpp.yaml
A table may grow over sessions on several machines (sessions get different CPUs). Each row
records its machine; on a machine new to the table, the script wants that machine's own
``--workload`` (the SLO rule applied there: k x the defaults' low-load p95s measured on it),
measures the defaults first, then goes on with the configurations left; the replay scales
each machine's rows by the defaults measured on it (``MeasuredTable.drift_corrected``).
``--until HH:MM`` (UTC) stops taking configurations when the next one and the closing
measurement of the defaults would not end by then, and takes that closing measurement, so
a session's rows have the defaults measured after them too. ``--state LABEL`` keys this run's
rows as ``<CPU identity> [LABEL]``: the same CPU in a state its workload file no longer fits
(its step 0 now far off the one the file was derived from), with a workload and defaults of
its own, as a machine new to the table.
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
import psutil
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


def stolen() -> list[float]:
    """Each core's steal time since boot, in seconds (0 where the kernel counts none)."""
    return [float(getattr(t, "steal", 0.0)) for t in psutil.cpu_times(percpu=True)]


def stolen_since(before: list[float]) -> list[float]:
    """Each core's steal time since ``before`` (:func:`stolen`), to a tenth of a second."""
    return [round(b - a, 1) for a, b in zip(before, stolen(), strict=True)]


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
    earlier = set(out.glob("*/measure.json"))  # a run of it stopped or redone before
    with (out / "output.txt").open("w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ, "COLUMNS": "100"})
    written = sorted(set(out.glob("*/measure.json")) - earlier)
    if len(written) != 1:
        raise SystemExit(f"{out}: tune measure wrote {len(written)} measure.json, not one")
    found: dict[str, Any] = json.loads(written[0].read_text())
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
        "the workload (default: the grid's own `workload`, else workload.yaml; on a machine "
        "new to a table, required: that machine's SLOs)"))
    parser.add_argument("--table", type=Path, default=None, help=(
        "the table file (default: table-<engine>.json here)"))
    parser.add_argument("--model", default=str(Path.home() / ".cache/tuner/models/tiny-llama"))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED", help=(
        "measure the configurations left in a seeded random order, so that a table stopped "
        "early is a uniform sample of the grid (default: grid order)"))
    parser.add_argument("--anchor-every", type=int, default=8, metavar="N", help=(
        "measure the defaults again after every N configurations on a machine (the table's "
        "anchors: how far the machine drifted while the table was built), once after "
        "the last configuration, and first when this machine already has rows (a run "
        "resumed sessions later is scaled by defaults measured in it, not across the gap)"))
    parser.add_argument("--until", default=None, metavar="HH:MM", help=(
        "UTC time by which to stop: no configuration is begun that, with the closing "
        "measurement of the defaults, would not end by then (judged by the longest row so "
        "far; a time already past: only the closing measurement)"))
    parser.add_argument("--state", default=None, metavar="LABEL", help=(
        "key this run's rows as '<CPU identity> [LABEL]': this CPU in a state its workload "
        "no longer fits, with its own --workload and defaults, as a machine new to the table"))
    args = parser.parse_args()
    grid = yaml.safe_load(args.grid.read_text())
    engine, knobs = grid["engine"], grid["knobs"]
    path = args.table or HERE / f"table-{engine}.json"
    run_dir = HERE / "run" / path.stem
    here = cpu_identity() if args.state is None else f"{cpu_identity()} [{args.state}]"
    workload = args.workload or (args.grid.parent / grid.get("workload", "workload.yaml"))
    table = (MeasuredTable.load(path) if path.is_file() else MeasuredTable(
        engine=engine, knobs=knobs, rows=[], workload=str(workload),
        command=" ".join(["python", *sys.argv]), machine=here))
    known = table.workloads.get(here, table.workload if here == table.machine else None)
    if known is None and table.rows and args.workload is None:
        sys.exit(f"{path}: its rows were measured on {', '.join(table.machines())}; this is "
                 f"{here}: give --workload with this machine's own SLOs (the rule applied "
                 "here)")
    if known is not None and args.workload is not None and str(args.workload) != known:
        sys.exit(f"--workload {args.workload}: this machine's rows used {known}; give that "
                 "one, or a new --table")
    workload = Path(known) if known is not None else workload
    if here != table.machine:
        table.workloads[here] = str(workload)
    deadline = None if args.until is None else _deadline(args.until)
    done = {json.dumps(table.key(r.config)) for r in table.rows if not r.defaults}
    todo: list[dict[str, Any] | None] = [] if any(r.defaults for r in table.rows) else [None]
    todo += [dict(zip(knobs, values, strict=True)) for values in itertools.product(
        *knobs.values()) if json.dumps(list(values)) not in done]
    if args.shuffle is not None:  # the defaults (None) stay first
        first = [c for c in todo if c is None]
        rest = [c for c in todo if c is not None]
        random.Random(args.shuffle).shuffle(rest)
        todo = first + rest
    print(f"{engine}: {len(table.rows)} rows measured, {len(todo)} to go; this machine: "
          f"{here}, workload {workload}", flush=True)

    def save() -> None:
        tmp = path.with_suffix(".part")
        tmp.write_text(table.model_dump_json(indent=1) + "\n")
        tmp.replace(path)

    def measured_here(defaults: bool) -> list[str]:
        return sorted(r.measured_at or "" for r in [*table.rows, *table.anchors]
                      if table.machine_of(r) == here and r.defaults == defaults)

    def since_defaults() -> int:
        """The rows measured on this machine since its defaults were last measured."""
        last = (measured_here(True) or [""])[-1]
        return sum(t > last for t in measured_here(False))

    def measured(config: dict[str, Any] | None, out: Path) -> TableRow:
        """One row: ``tune measure`` of ``config`` (None: the defaults) on this machine, with
        the machine's speed before it and the steal time during it."""
        speed, before = machine_speed(), stolen()
        report = measure(engine, config, workload, args.model, args.repeats, out)
        table.engine_version = report["engine_version"]
        row = row_of(report, report["config"] if config is None else config, config is None)
        row.machine_speed, row.machine, row.steal_s = speed, here, stolen_since(before)
        return row

    def anchor() -> None:
        """The defaults measured again, into the table's anchors."""
        t0 = time.monotonic()
        table.anchors.append(measured(None, run_dir / f"anchor-{len(table.anchors) + 1}"))
        save()
        drift = table.drift()
        print(f"anchor {len(table.anchors)} (the defaults again): "
              f"{', '.join(f'{c:.4g}' for c in table.anchors[-1].costs)}; drift so far "
              f"{'?' if drift is None else f'{drift:.1%}'} "
              f"({time.monotonic() - t0:.0f}s)", flush=True)

    if todo and todo[0] is not None and not measured_here(True):
        anchor()  # a machine new to the table: its defaults first, to scale its rows by
    elif todo and todo[0] is not None and args.anchor_every > 0 and measured_here(False):
        # A run opens with the defaults: the machine may have changed since the last run
        # (sessions apart), and this run's rows are scaled by the defaults measured in it, not
        # by a line drawn across the gap. It also closes an earlier run's rows left without.
        anchor()
    took: list[float] = []
    for i, config in enumerate(todo):
        if deadline is not None and time.time() + 2.2 * max(took, default=0.0) > deadline:
            print(f"stopping by {args.until} UTC: {len(todo) - i} configurations left",
                  flush=True)
            break
        t0 = time.monotonic()
        name = "defaults" if config is None else "-".join(str(v) for v in config.values())
        row = measured(config, run_dir / name)
        speed = row.machine_speed
        table.rows.append(row)
        save()
        took.append(time.monotonic() - t0)
        costs = ", ".join(f"{c:.4g}" for c in row.costs) or row.outcome
        print(f"[{i + 1}/{len(todo)}] {name}: {costs} ({took[-1]:.0f}s; machine "
              f"{speed['matmul_gflops']:g} GFLOP/s, {speed['copy_gb_s']:g} GB/s; steal "
              f"{'/'.join(f'{x:g}' for x in row.steal_s)} s)", flush=True)
        if args.anchor_every > 0 and since_defaults() >= args.anchor_every:
            anchor()
    if args.anchor_every > 0 and since_defaults() > 0:
        anchor()  # the closing one: the rows after the last anchor have one after them too


def _deadline(hh_mm: str) -> float:
    """The time (epoch seconds) the UTC clock reads HH:MM nearest to now, within 12 hours
    either way: 01:15 at 23:40 is in 95 minutes, 00:30 at 00:34 is past."""
    now = time.time()
    hours, minutes = (int(x) for x in hh_mm.split(":"))
    at = now - now % 86400 + hours * 3600 + minutes * 60
    if at < now - 43200:
        at += 86400
    elif at > now + 43200:
        at -= 86400
    return at


if __name__ == "__main__":
    main()
