"""A long run's ITL figures in passes: the same values, a fraction of the memory, at what cost?

Builds ``--requests`` finished records of 128 chunks (seeded gaps of 4-9 ms, one token a
chunk mostly, two in 10%), spills their chunks to disk as a run does (chunk_spill.py), then
makes the ITL distribution two ways, interleaved (A B B A):
- held: every gap in one float64 array, as the figures did before (``np.fromiter`` over the
  records' gaps, then ``dist_ms`` in place: 8 bytes a gap);
- passes: ``figures.latency_dist``, which holds at most 2^19 gaps and reads the records
  again for the percentiles (radix selection, selection.py).
For each: wall time (without tracemalloc), then tracemalloc's peak in a second call (numpy's
arrays included), and whether the figures agree (all but the mean to the bit).

Run: PYTHONPATH=. .venv/bin/python experiments/benchmarks/figures_passes.py [--requests 36000]
Output kept in figures_passes-*.txt next to this file.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from itertools import chain
from pathlib import Path

import numpy as np

from tuner.loadgen import ChunkSpill, RequestRecord
from tuner.metric_registry import LATENCY
from tuner.metrics import Dist, dist_ms, latency_dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_cost import machine  # noqa: E402

MB = 2**20


def records(n: int, spill: ChunkSpill) -> list[RequestRecord]:
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        rec = RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=32,
                            planned_output_tokens=128, scheduled_ns=i * 50_000_000,
                            sent_ns=i * 50_000_000)
        start = rec.sent_ns + 20_000_000
        times = [start, *(start + np.cumsum(rng.integers(4_000_000, 9_000_000, 127))).tolist()]
        for at, two in zip(times, rng.random(128) < 0.1, strict=True):
            rec.add_chunk(at, 2 if two else 1)
        rec.first_token_ns, rec.done_ns = times[0], times[-1]
        rec.seal()
        spill.keep(rec)
        out.append(rec)
    return out


def measure(make: Callable[[], Dist]) -> tuple[Dist, float, float]:
    t = time.perf_counter()
    dist = make()
    wall = time.perf_counter() - t
    tracemalloc.start()
    make()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return dist, wall, peak / MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=36_000)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    spill = ChunkSpill()
    recs = records(args.requests, spill)
    itl = LATENCY["itl"]
    ways: dict[str, Callable[[], Dist]] = {
        "held": lambda: dist_ms(np.fromiter(chain.from_iterable(itl.values_ns(r) for r in recs),
                                            dtype=np.float64), consume=True),
        "passes": lambda: latency_dist(itl, recs),
    }
    print(f"{args.requests} records of 128 chunks, spilled: {spill.size / MB:.1f} MB on disk")
    got: dict[str, list[tuple[Dist, float, float]]] = {"held": [], "passes": []}
    for name in ("held", "passes", "passes", "held"):
        got[name].append(measure(ways[name]))
    for name, runs in got.items():
        walls = ", ".join(f"{w:.2f}" for _, w, _ in runs)
        peaks = ", ".join(f"{p:.1f}" for _, _, p in runs)
        print(f"  {name:6s}: {walls} s; peak traced {peaks} MB")
    held, passes = got["held"][0][0], got["passes"][0][0]
    same = held.model_dump(exclude={"mean"}) == passes.model_dump(exclude={"mean"})
    print(f"  {held.count} gaps; p50 {held.p50:.6f} ms, p99 {held.p99:.6f} ms; figures the same "
          f"to the bit but the mean: {same}; mean {held.mean!r} against {passes.mean!r}")


if __name__ == "__main__":
    main()
