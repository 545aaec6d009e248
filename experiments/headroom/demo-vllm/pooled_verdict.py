"""The verdict of the pairs of several `tune measure --against` runs of the same two
configurations, as one run of all their pairs would give it (PLAN.md, amendment of
2026-12-06 15:41 UTC).

Each run's pairs are taken as that run ordered them (its ``sides``), then laid out in the order
one run of all the pairs would have measured them (``interleaved``), and decided by the
command's own function (``paired_outcome``): the same log ratios, the same pooled
start-to-start spread and step floor, the same level and resolution.

Run: .venv/bin/python experiments/headroom/demo-vllm/pooled_verdict.py MEASURE_JSON...
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tuner.study import TrialResult
from tuner.study.repeats import interleaved, paired_outcome


def pairs_of(report: dict[str, Any]) -> tuple[list[tuple[TrialResult, TrialResult]], list[str]]:
    """A run's pairs as (A's start, B's start), and the names of A and B."""
    results = [TrialResult.model_validate(r) for r in report["repeats"]]
    sides: list[str] = report["sides"]
    names = list(dict.fromkeys(sides))
    pairs = []
    for k in range(len(results) // 2):
        two = {sides[2 * k + j]: results[2 * k + j] for j in (0, 1)}
        pairs.append((two[names[0]], two[names[1]]))
    return pairs, names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="measure.json of each run")
    parser.add_argument("--resolution", type=float, default=0.05)
    args = parser.parse_args()
    pairs: list[tuple[TrialResult, TrialResult]] = []
    names: list[str] | None = None
    for path in args.runs:
        report = json.loads(path.read_text())
        more, these = pairs_of(report)
        if names is not None and these != names:
            raise SystemExit(f"{path}: compares {' and '.join(these)}, not "
                             f"{' and '.join(names)}")
        names = these
        print(f"{path}: {len(more)} pairs; its own verdict: {report['verdict_line']}")
        pairs += more
    assert names is not None
    order = interleaved(len(pairs))
    laid_out = [pair[order[2 * k + j]] for k, pair in enumerate(pairs) for j in (0, 1)]
    outcome = paired_outcome(laid_out, args.resolution)
    for why in outcome.left_out:
        print(f"left out: {why}")
    if outcome.verdict is None:
        print("no pair counted")
        return
    print(f"all {len(pairs)} pairs: {outcome.verdict.sentence(*names)}")
    for k, (a, b) in enumerate(pairs):
        print(f"  pair {k + 1}: {names[0]} ${a.cost_per_m_output_tokens:.4f}/M at "
              f"{a.max_load}, {names[1]} ${b.cost_per_m_output_tokens:.4f}/M at {b.max_load}")


if __name__ == "__main__":
    main()
