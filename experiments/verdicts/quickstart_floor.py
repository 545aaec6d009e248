"""The fresh-clone quickstarts' verdicts again, from their printed steps, with the step floor.

results/quickstart-fresh-<i>.txt hold each run's whole output. Each re-measurement start of
the defaults (trial 0) and of the best (the other re-measured trial) printed its steps; its
capacity lies between its highest passing and its lowest failing load. This recomputes the
paired verdict the run printed (capacities as the midpoints, in log load, that the search
reports when it did not interpolate) without and with the floor that a step's own width sets
(``tuner.metrics.step_floor``), at the quickstart's resolution (5%).

    PYTHONPATH=. .venv/bin/python experiments/verdicts/quickstart_floor.py
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from tuner.metrics import floored, paired_verdict, pooled_spread, step_floor

RESULTS = Path(__file__).resolve().parent / "results"
HEADER = re.compile(r"trial: re-measuring \S+ trial (\d+) on a fresh start \(repeat (\d+)\)")
STEP = re.compile(r"^step \d+, load ([\d.]+) req/s:.*: (pass|fail)", re.M)


def starts(text: str) -> dict[tuple[int, int], tuple[float, float]]:
    """(trial, repeat) -> (highest passing load, lowest failing load above it)."""
    parts = HEADER.split(text)
    found = {}
    for k in range(1, len(parts), 3):
        trial, repeat, body = int(parts[k]), int(parts[k + 1]), parts[k + 2]
        steps = [(float(m.group(1)), m.group(2)) for m in STEP.finditer(body)]
        passed = max(load for load, verdict in steps if verdict == "pass")
        failed = min(load for load, verdict in steps if verdict == "fail" and load > passed)
        found[(trial, repeat)] = (passed, failed)
    return found


def main() -> None:
    files = sorted(RESULTS.glob("quickstart-fresh-*.txt"))
    if not files:
        sys.exit(f"no results/quickstart-fresh-*.txt in {RESULTS}")
    for path in files:
        got = starts(path.read_text())
        best = next(t for t, _ in got if t != 0)
        capacity = {key: math.sqrt(lo * hi) for key, (lo, hi) in got.items()}
        widths = [(hi - lo) / lo for lo, hi in got.values()]
        repeats = sorted({r for _, r in got})
        logs = [math.log(capacity[(best, r)] / capacity[(0, r)]) for r in repeats]
        groups = [[capacity[(t, r)] for r in repeats] for t in (0, best)]
        pooled = pooled_spread(groups)
        floor = step_floor(widths)
        before = paired_verdict(logs, 0.05, pooled=pooled)
        after = paired_verdict(logs, 0.05, pooled=floored(pooled, floor), floor_sd=floor)
        spread = floored(pooled, floor)
        print(f"{path.name}: defaults {[round(c) for c in groups[0]]} req/s, trial {best} "
              f"{[round(c) for c in groups[1]]}; steps {', '.join(f'{w:.1%}' for w in widths)}")
        print(f"  as printed:      {before.kind}, {before.interval_text()}; start-to-start "
              f"{pooled.text() if pooled else '-'}")
        print(f"  with the floor:  {after.kind}, {after.interval_text()}; start-to-start "
              f"{spread.text() if spread else '-'} (floor {floor:.1%} per start)")


if __name__ == "__main__":
    main()
