"""Runs that tell the truth about the prompts they send, through the real command line against
the test SSE server (a fake at the HTTP seam): each run sends fresh prompts unless asked to
repeat (--seed, --epoch, both recorded), and a server whose prefix cache hits more than the
run's own sharing explains is named."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.sse_server import sse_server
from tests.unit.cli_runner import tune_all

WORKLOAD = """\
name: fresh
model: tiny-llama
classes:
  - {name: c, weight: 1, input: {dist: lognormal, mean: 40, sigma: 0.5, min: 8, max: 200},
     output: {dist: fixed, value: 4}}
arrival: {process: constant, rate: 10}
stop: {duration_s: 1}
slo: {ttft_p95_ms: 1000, itl_p95_ms: 200}
cost: {usd_per_hour: 1.0}
capacity: {keep_up_tolerance: 0.5}   # 10 requests: one more or less is 10% of the tokens
"""


def lengths(json_path: Path) -> list[int]:
    with json_path.with_name(json_path.stem + ".records.csv").open() as fh:
        return [int(row["input_tokens"]) for row in csv.DictReader(fh)]


@pytest.mark.slow
def test_fresh_prompts_unless_asked_to_repeat(tiny_model: Path, tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    out = {name: tmp_path / f"{name}.json" for name in ("a", "b", "c", "d")}
    with sse_server(hit_share=0.3) as url:
        base = ["bench", "--endpoint", url, "--workload", str(workload), "--tokenizer",
                str(tiny_model)]
        runs = tune_all([*base, "--json", str(out["a"])], [*base, "--json", str(out["b"])],
                        [*base, "--json", str(out["c"]), "--seed", "3", "--epoch", "7"],
                        [*base, "--json", str(out["d"]), "--seed", "3", "--epoch", "7"])
    for done in runs:
        assert done.returncode == 0, done.stderr
    recorded = {k: json.loads(p.read_text()) for k, p in out.items()}
    assert recorded["a"]["epoch"] != recorded["b"]["epoch"]  # drawn: fresh each run
    assert lengths(out["a"]) != lengths(out["b"])
    assert (recorded["c"]["seed"], recorded["c"]["epoch"]) == (3, 7)
    assert lengths(out["c"]) == lengths(out["d"])  # asked to repeat: the same requests
    assert runs[2].stdout.startswith("prompts: seed 3, epoch 7 (--seed 3 --epoch 7 sends them "
                                     "again)")
    # The fake server's cache "hits" 30% of prompt tokens; the run shares none of its own.
    assert "the server's prefix cache hit 30.0% of prompt tokens" in runs[0].stderr
    assert "the run's own sharing explains 0.0%" in runs[0].stderr
