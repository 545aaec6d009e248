"""The SLO rule of PLAN.md, applied to a step 0: a machine's workload file from its low-load run.

From `lowload.py`'s JSON (the defaults at 0.3 req/s): p95 TTFT `T`, p95 ITL `I` and mean E2E.
The workload is `workload-f25m17-k3.yaml` with `ttft_p95_ms = round(k T)`, `itl_p95_ms =
round(k I)`, and the arrival rate and the capacity search's start at 1 / mean E2E rounded down
to a whole req/s (to 0.1 req/s below 1). `--fits FILE` says instead whether a step 0 still fits
a workload file made by this rule: its T and I within 1.5x either way of the file's bounds / k
(the amendment of 2026-12-07 17:19 UTC); exit 1 when they do not.

Run: .venv/bin/python experiments/headroom/demo-vllm/derive_workload.py \
         experiments/headroom/demo-vllm/results/lowload-f6m167-s62.json --name f6m167-s62
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "workload-f25m17-k3.yaml"
FIT = 1.5  # how far (either way) a step 0 may be from the one its workload file came from


def step0(path: Path) -> tuple[float, float, float]:
    """p95 TTFT, p95 ITL and mean E2E (ms) of a `lowload.py` run."""
    result = json.loads(path.read_text())["result"]
    return result["ttft_ms"]["p95"], result["itl_ms"]["p95"], result["e2e_ms"]["mean"]


def single_stream_rate(e2e_ms: float) -> float:
    """1 / mean E2E, rounded down to a whole req/s, or to 0.1 req/s below 1."""
    rate = 1000.0 / e2e_ms
    return float(math.floor(rate)) if rate >= 1 else math.floor(rate * 10) / 10


def derived(source: Path, name: str, k: float) -> str:
    """The workload file's text: the template with this step 0's bounds, rate and name."""
    ttft, itl, e2e = step0(source)
    rate = single_stream_rate(e2e)
    shown = f"{rate:g}"
    text = TEMPLATE.read_text()
    body = text[text.index("name:"):]
    body = re.sub(r"^name: .*$", f"name: demo-vllm-{name}-k{k:g}", body, flags=re.M)
    body = re.sub(r"poisson, rate: [0-9.]+\}", f"poisson, rate: {shown}}}", body)
    body = re.sub(r"ttft_p95_ms: [0-9]+, itl_p95_ms: [0-9]+",
                  f"ttft_p95_ms: {round(k * ttft)}, itl_p95_ms: {round(k * itl)}", body)
    body = re.sub(r"capacity: \{start: [0-9.]+,", f"capacity: {{start: {shown},", body)
    header = (f"# The vLLM demo's workload by PLAN.md's SLO rule (derive_workload.py); k = {k:g}:\n"
              f"# T = {ttft:.1f} ms, I = {itl:.1f} ms ({source.name}). Arrivals (the warm-up's "
              f"rate) and the capacity\n# search start at {shown} req/s: the defaults' "
              f"single-stream rate at low load, 1 / mean E2E ({e2e:.1f} ms)\n"
              f"# = {1000 / e2e:.3g} req/s, rounded down.\n")
    return header + body


def fits(source: Path, workload: Path, k: float) -> list[str]:
    """What in this step 0 is more than FIT x off the one the workload file came from."""
    ttft, itl, _ = step0(source)
    slo = yaml.safe_load(workload.read_text())["slo"]
    off = []
    for what, now, bound in (("p95 TTFT", ttft, slo["ttft_p95_ms"]),
                             ("p95 ITL", itl, slo["itl_p95_ms"])):
        then = bound / k
        if not 1 / FIT <= now / then <= FIT:
            off.append(f"{what} {now:.1f} ms against {then:.1f} ms ({now / then:.2f}x)")
    return off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step0", type=Path, help="a lowload.py JSON (results/lowload-*.json)")
    parser.add_argument("--name", help="the machine (and state): writes workload-NAME-k3.yaml")
    parser.add_argument("--k", type=float, default=3.0)
    parser.add_argument("--fits", type=Path, metavar="WORKLOAD",
                        help="say whether this step 0 still fits that workload file")
    args = parser.parse_args()
    if args.fits is not None:
        off = fits(args.step0, args.fits, args.k)
        print(f"{args.step0.name} against {args.fits.name}: "
              + ("fits (within 1.5x)" if not off else "does not fit: " + "; ".join(off)))
        sys.exit(1 if off else 0)
    if args.name is None:
        sys.exit("give --name (the machine) to write a workload, or --fits WORKLOAD")
    out = HERE / f"workload-{args.name}-k{args.k:g}.yaml"
    if out.exists():
        sys.exit(f"{out.name} exists: the rows measured under it keep it; choose another --name")
    out.write_text(derived(args.step0, args.name, args.k))
    print(f"wrote {out.relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    main()
