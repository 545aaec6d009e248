"""Write a request log drawn from a known workload, as a Mooncake trace (the log to fit).

The known workload, drawn here with numpy and not by the tool's own planner (so the fit is
not checked against its own sampling): 6 requests/s for --duration seconds (150: 900
requests), gamma arrivals with an inter-arrival CV of 1.5; three quarters chat (own tokens
lognormal, median 150, sigma 0.5, clipped to 16-800; output normal 60 +- 15, 8-128), a
quarter documents (own tokens uniform 1200-2000; output 32); 70% of requests start with one
of three shared 1024-token system prompts (two 512-token blocks each). Each request's blocks
are its `hash_ids`: the system prompt's two ids, then ids of its own.

Run: .venv/bin/python experiments/workload-fit/make_log.py [--out log.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
RATE, CV = 6.0, 1.5
BLOCK, PREFIX_BLOCKS, GROUPS, SHARE = 512, 2, 3, 0.7


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=HERE / "log.jsonl")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--duration", type=float, default=150.0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = int(RATE * args.duration)
    shape = 1 / CV**2
    gaps = rng.gamma(shape, 1 / (RATE * shape), n)
    times = np.cumsum(gaps) - gaps[0]
    chat = rng.random(n) < 0.75
    own = np.where(chat, np.clip(np.round(rng.lognormal(math.log(150), 0.5, n)), 16, 800),
                   np.round(rng.uniform(1200, 2000, n))).astype(int)
    out = np.where(chat, np.clip(np.round(rng.normal(60, 15, n)), 8, 128), 32).astype(int)
    group = np.where(rng.random(n) < SHARE, rng.integers(0, GROUPS, n), -1)
    next_id = GROUPS * PREFIX_BLOCKS
    lines = []
    for i in range(n):
        ids: list[int] = []
        if group[i] >= 0:
            ids = [int(group[i]) * PREFIX_BLOCKS + b for b in range(PREFIX_BLOCKS)]
        prompt = len(ids) * BLOCK + int(own[i])
        for _ in range(math.ceil(prompt / BLOCK) - len(ids)):
            ids.append(next_id)
            next_id += 1
        lines.append(json.dumps({"timestamp": int(round(times[i] * 1000)),
                                 "input_length": prompt, "output_length": int(out[i]),
                                 "hash_ids": ids}))
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{n} requests over {times[-1]:.1f} s -> {args.out}")


if __name__ == "__main__":
    main()
