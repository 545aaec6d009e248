"""Each engine's tuning delta as a paired verdict (tuned against defaults, start by start), from
the comparison's stored fresh starts (results/compare.json), beside the bootstrap interval the
report prints. The report's tuning-delta column resamples starts and requests; with two starts a
configuration that cannot see how far a restart moves the capacity, the pairs can.

    PYTHONPATH=. .venv/bin/python experiments/compare-cpu/three-engines/paired_tuning.py
"""

from __future__ import annotations

import json
from pathlib import Path

from tuner.study.repeats import MeasuredRun, verdict_between

RESULTS = Path(__file__).resolve().parent / "results" / "compare.json"


def main() -> None:
    stored = json.loads(RESULTS.read_text())
    runs = [MeasuredRun.model_validate(r) for r in stored["runs"]]
    for engine in stored["engines"]:
        name, delta = engine["engine"], engine["tuning_delta"]
        trials = sorted({r.trial for r in runs if r.engine == name})
        tuned = [t for t in trials if t != 0]
        line = (f"{name}: bootstrap {delta['value']:.2f}x ({delta['low']:.2f}-"
                f"{delta['high']:.2f}); ")
        if not tuned:
            print(line + "the tuned choice is the defaults")
            continue
        verdict = verdict_between(runs, (name, tuned[0]), (name, 0), 0.05)
        capacities = {t: [round(r.load, 1) for r in runs if (r.engine, r.trial) == (name, t)]
                      for t in trials}
        print(line + f"paired (trial {tuned[0]} against the defaults): "
              f"{verdict.kind if verdict else '-'}, "
              f"{verdict.interval_text() if verdict else 'no pair'}; capacities {capacities}")


if __name__ == "__main__":
    main()
