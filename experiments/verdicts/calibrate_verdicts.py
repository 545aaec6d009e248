"""Calibration of the paired verdict on simulated engines: A/A comparisons must almost never
call a winner, and a true difference must be resolved within a budget of engine starts.

Each run compares configuration A with B by paired, interleaved fresh starts (A B B A A B
...), deciding after each pair from the second on (tuner/metrics/paired_ratio.py, its level
shared over every look the budget allows and over the ``--family`` leaders of a race), and
stops when decided or when the starts run out. A start's capacity is its own true capacity
(the configuration's, times exp(N(0, start_cv)): engine restarts differ) measured with the
capacity search's error, exp(N(0, within_sd)); ``--full`` measures each start with the real
search on tests/unit/fakes/queueing_engine.py instead (slow). The start-to-start spread is
pooled over both configurations' starts (one-way random effects on log capacity).

    PYTHONPATH=. .venv/bin/python experiments/verdicts/calibrate_verdicts.py --runs 400
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from collections import Counter

import numpy as np

from tuner.metrics import paired_verdict, pooled_spread


def order(pairs: int) -> list[str]:
    """A B B A A B B A ...: each pair's two starts adjacent, who goes first alternating."""
    out: list[str] = []
    for i in range(pairs):
        out += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return out


def schedule(max_pairs: int, looks: int) -> list[int]:
    """The pairs after which a verdict is drawn: ``looks`` of them, evenly up to the last."""
    return sorted({max(2, round(max_pairs * (k + 1) / looks)) for k in range(looks)})


def one_run(rng: np.random.Generator, true_ratio: float, a: argparse.Namespace) -> tuple[str, int]:
    caps: dict[str, list[float]] = {"A": [], "B": []}
    max_pairs = a.starts // 2
    base = {"A": 20.0 * true_ratio, "B": 20.0}
    for i, who in enumerate(order(max_pairs)):
        start = base[who] * math.exp(rng.normal(0, a.start_cv))
        caps[who].append(start * math.exp(rng.normal(0, a.within_sd)))
        pairs = min(len(caps["A"]), len(caps["B"]))
        if i % 2 == 1 and pairs in schedule(max_pairs, a.looks):
            logs = [math.log(x / y) for x, y in zip(caps["A"], caps["B"], strict=False)]
            pooled = pooled_spread([caps["A"], caps["B"]]) if a.pooled else None
            v = paired_verdict(logs, a.resolution, pooled=pooled, family=a.family,
                               looks=len(schedule(max_pairs, a.looks)))
            if v.kind != "unresolved":
                return v.kind, i + 1
    return "unresolved", 2 * max_pairs


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=400)
    p.add_argument("--starts", type=int, default=12)
    p.add_argument("--start-cv", type=float, default=0.05)
    p.add_argument("--within-sd", type=float, default=0.025)
    p.add_argument("--resolution", type=float, default=0.05)
    p.add_argument("--family", type=int, default=1)
    p.add_argument("--looks", type=int, default=2)
    p.add_argument("--no-pooled", dest="pooled", action="store_false")
    a = p.parse_args()
    t0 = time.monotonic()
    print(f"machine: {platform.machine()}, python {platform.python_version()}; start CV "
          f"{a.start_cv:.0%}, within-start SD {a.within_sd:.1%}, resolution "
          f"±{a.resolution:.0%}, at most {a.starts} starts, verdicts after pairs "
          f"{schedule(a.starts // 2, a.looks)}, family of {a.family}, spread "
          f"{'pooled over both' if a.pooled else 'of the pairs'}")
    for ratio in (1.0, 1.10, 1.20):
        rng = np.random.default_rng(int(ratio * 1000))
        kinds: Counter[str] = Counter()
        starts = []
        for _ in range(a.runs):
            kind, used = one_run(rng, ratio, a)
            kinds[kind] += 1
            starts.append(used)
        share = {k: kinds[k] / a.runs for k in ("better", "worse", "equivalent", "unresolved")}
        print(f"true ratio {ratio:.2f}: " + ", ".join(f"{k} {v:.1%}" for k, v in share.items())
              + f"; starts used: median {np.median(starts):.0f}, mean {np.mean(starts):.1f}")
    print(f"{time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
