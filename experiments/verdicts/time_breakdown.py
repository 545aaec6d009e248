"""Where a fresh start's time goes (issue 35, item 9), from what a run folder already holds.

For each start of a `tune measure` folder (measure.json) or a study (trials/*.json): the
engine's start-up, split by the engine's own log where it says (vLLM: model initialisation,
weight loading, ``init engine (profile, create kv cache, warmup model)``; the rest is process
start, imports and the API server), the warm-up (its ramp rounds and settle rounds), the
measured steps (their summed durations; the rest of the measurement is waiting for the engine
to drain between steps and the tuner's own work), the teardown, and what the command spent
outside the starts (the tuner: set-up, analysis, writing).

    PYTHONPATH=. .venv/bin/python experiments/verdicts/time_breakdown.py tune-runs/controls/<run>
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

PATTERNS = {
    "init_model": re.compile(r"Initializing model took ([\d.]+) seconds"),
    "load_weights": re.compile(r"Loading weights took ([\d.]+) seconds"),
    "init_engine": re.compile(r"init engine \(profile, create kv cache, warmup model\) took "
                              r"([\d.]+) s"),
}


def engine_parts(log: Path | None) -> dict[str, float]:
    """What the engine's log says its start-up spent (seconds), by part."""
    found: dict[str, float] = {}
    if log is None or not log.is_file():
        return found
    text = log.read_text(errors="replace")
    for key, pattern in PATTERNS.items():
        m = pattern.search(text)
        if m:
            found[key] = float(m.group(1))
    return found


def starts_of(folder: Path) -> tuple[list[dict[str, Any]], float | None]:
    """The folder's starts (TrialResult as JSON) and the command's wall time, if recorded."""
    measure = folder / "measure.json"
    if measure.is_file():
        data = json.loads(measure.read_text())
        return list(data["repeats"]), data.get("wall_s")
    trials = [json.loads(p.read_text()) for p in sorted((folder / "trials").glob("*.json"))]
    summary = folder / "summary.json"
    wall = None
    if summary.is_file():
        wall = json.loads(summary.read_text()).get("time", {}).get("wall_s")
    return trials, wall


def row(start: dict[str, Any], folder: Path) -> dict[str, float]:
    t = start.get("timing") or {}
    log = Path(start["log_path"]) if start.get("log_path") else None
    if log is not None and not log.is_file():  # a folder moved since: its own logs/
        log = folder / "logs" / log.name
    parts = engine_parts(log)
    cap = start.get("capacity") or {}
    steps = cap.get("steps") or []
    warm = cap.get("warmup") or {}
    stepped = sum(s.get("duration_s") or 0.0 for s in steps)
    return {
        "startup": t.get("startup_s", 0.0),
        "engine_init": parts.get("init_engine", float("nan")),
        "weights": parts.get("load_weights", float("nan")) + parts.get("init_model", 0.0),
        "warmup": t.get("warmup_s", 0.0),
        "ramp_rounds": float(len(warm.get("ramp") or [])),
        "settle_rounds": float(len(warm.get("rounds") or [])),
        "steps": float(len(steps)),
        "stepped": stepped,
        "between_steps": t.get("measure_s", 0.0) - stepped,
        "teardown": t.get("teardown_s", 0.0),
        "wall": t.get("wall_s", 0.0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, nargs="+")
    args = ap.parse_args()
    for folder in args.folder:
        starts, wall = starts_of(folder)
        rows = [row(s, folder) for s in starts]
        print(f"{folder}: {len(rows)} start(s)")
        print("  start  startup (engine init, weights)  warm-up (ramp+settle rounds)  "
              "steps: n, measured s, between s  teardown   wall")
        for i, r in enumerate(rows):
            print(f"  {i:5d}  {r['startup']:6.1f} s ({r['engine_init']:5.1f}, "
                  f"{r['weights']:4.2f})        {r['warmup']:5.1f} s ({r['ramp_rounds']:.0f}+"
                  f"{r['settle_rounds']:.0f})              {r['steps']:2.0f} {r['stepped']:6.1f} "
                  f"{r['between_steps']:6.1f}          {r['teardown']:5.1f}  {r['wall']:6.1f}")
        total = sum(r["wall"] for r in rows)
        if not total:
            continue
        shares = {k: sum(r[k] for r in rows) / total
                  for k in ("startup", "warmup", "stepped", "between_steps", "teardown")}
        print("  of the starts' time: " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
        if wall:
            print(f"  the command's wall time {wall:.0f} s: the starts {total / wall:.0%}, "
                  f"the tuner outside them {(wall - total) / wall:.0%} ({wall - total:.0f} s)")


if __name__ == "__main__":
    main()
