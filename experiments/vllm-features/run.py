"""Sessions, intensification and warm start, each run once in a real study on vLLM CPU (issue 38
item 4), with checks on what the engine saw, not only on the tuner's own records.

1. A study on a multi-turn workload (`workload-sessions.yaml`: conversations of 3-5 turns,
   each turn's prompt the system prompt and every earlier turn), with `--intensify` and the
   re-measurement of its best on fresh starts. Checked:
   - vLLM's own prefix-cache counters (`vllm:prefix_cache_hits` / `queries`, scraped from its
     /metrics during every step) show hits on the trials with prefix caching on, far above
     the run's own share of shared prompt prefixes would give by chance, and none where it
     is off;
   - a trial that intensification measured again has as many engine starts in its logs
     (`trial-NNN*.log`, each opening with the command vLLM was started with) as the trial
     says it had starts;
   - the re-measured configurations have their own fresh-start logs.
2. A study on `tests/data/workload-ci.yaml` warm-started from the first (`--warm-start`):
   the first trial after the defaults is the first study's cheapest configuration, and the
   command line vLLM was started with for it carries that configuration's flags.

Run (from the repository root, after `bash .ci/setup`; about 20 minutes on 2 cores):
    .venv/bin/python experiments/vllm-features/run.py --out /tmp/vllm-features
It prints what it checked, with the figures, and exits 1 on the first check that fails; its
output is kept in results.txt.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tuner.host import cpu_identity

HERE = Path(__file__).parent
REPO = HERE.parents[1]


def tune(*args: str) -> None:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "tuner", *args]
    print("$ tune " + " ".join(args), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(f"  exit {done.returncode} after {time.monotonic() - t0:.0f} s", flush=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        sys.exit(1)


def trials(study: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((study / "trials").glob("*.json"))]


def check(what: str, ok: bool, figures: str) -> None:
    print(f"  {'ok' if ok else 'FAILED'}: {what}: {figures}", flush=True)
    if not ok:
        sys.exit(1)


def started_with(log: Path) -> str:
    """The command line the engine was started with (the first line of its log)."""
    first = log.read_text(errors="replace").splitlines()[0]
    return first.removeprefix("$ ")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default=str(Path.home() / ".cache/tuner/models/tiny-llama"))
    args = parser.parse_args()
    print(f"machine: {cpu_identity()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")

    sessions = args.out / "sessions"
    tune("--engine", "vllm", "--workload", str(HERE / "workload-sessions.yaml"),
         "--model", args.model, "--trials", "4", "--intensify", "--remeasure-top", "1",
         "--repeats", "1", "--search-space", str(HERE / "space-sessions.yaml"),
         "--seed", "38", "--out", str(sessions), "--study-name", "sessions")
    study = sessions / "sessions"
    done = trials(study)
    print("1. sessions, intensification, re-measurement")
    for t in done:
        server = ((t.get("best") or {}).get("server") or {})
        caching = t["config"].get("prefix_caching", True)
        hit = server.get("prefix_cache_hit_rate")
        own = (t.get("best") or {}).get("own_prefix_share")
        if t["outcome"] != "ok" or hit is None:
            print(f"  trial {t['number']}: {t['outcome']}, no hit rate read")
            continue
        if caching:
            check(f"trial {t['number']} (prefix caching on): vLLM's own prefix-cache hits",
                  hit > 0.3, f"hit rate {hit:.1%} of prompt tokens; the run's own shared "
                  f"prefixes {own if own is None else f'{own:.1%}'}")
        else:
            check(f"trial {t['number']} (prefix caching off): no hits", hit == 0.0,
                  f"hit rate {hit:.1%}")
    for t in done:
        logs = sorted((study / "logs").glob(f"trial-{t['number']:03d}*.log"))
        check(f"trial {t['number']}: one engine log per start", len(logs) >= t["starts"],
              f"{t['starts']} start(s) in its record, {len(logs)} log(s): "
              + ", ".join(p.name for p in logs))
    again = [t for t in done if t["starts"] > 1]
    check("intensification measured a leader again on a fresh start", bool(again),
          ", ".join(f"trial {t['number']}: {t['starts']} starts, costs {t['costs']}"
                    for t in again) or "no trial had two starts")
    remeasured = sorted((study / "logs").glob("remeasure*.log"))
    check("the re-measurement started the engine afresh", bool(remeasured),
          f"{len(remeasured)} log(s)")

    warm = args.out / "warm"
    tune("--engine", "vllm", "--workload", str(REPO / "tests/data/workload-ci.yaml"),
         "--model", args.model, "--trials", "2", "--remeasure-top", "0",
         "--warm-start", str(study), "--seed", "38", "--out", str(warm),
         "--study-name", "warm")
    print("2. warm start")
    best = min((t for t in done if t["outcome"] == "ok" and not t["defaults"]
                and t.get("cost_per_m_output_tokens") is not None),
               key=lambda t: t["cost_per_m_output_tokens"])
    first = next(t for t in trials(warm / "warm") if not t["defaults"])
    wanted = {k: v for k, v in best["config"].items() if v is not None}
    check("the first trial after the defaults is the earlier study's cheapest",
          {k: first["config"].get(k) for k in wanted} == wanted,
          f"trial {first['number']}: {first['config']} (earlier best: trial "
          f"{best['number']}, {wanted})")
    log = sorted((warm / "warm" / "logs").glob(f"trial-{first['number']:03d}*.log"))[0]
    line = started_with(log)
    flags = {"max_batch_size": "--max-num-seqs", "max_batched_tokens": "--max-num-batched-tokens"}
    shown = {k: f"{flag} {wanted[k]}" for k, flag in flags.items() if k in wanted}
    check("vLLM was started with those flags", all(s in line for s in shown.values()),
          f"{', '.join(shown.values())} in its command line ({line[:120]} ...)")


if __name__ == "__main__":
    main()
