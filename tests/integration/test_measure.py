"""`tune measure` on a real llama-server: two fresh starts of its defaults, each warmed up, each
with a bracketed capacity, and the two agree within their brackets. The run is interrupted
(SIGTERM) after its first start and goes on with ``--resume``: measure.json held that start,
marked incomplete, no engine was left behind, and the resumed run measured only the second.
(llama-server starts in seconds where vLLM's CPU build takes 40-75 s a start; vLLM's fresh
starts are measured the same way in tests/integration/test_compare.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_measure_twice_agrees_within_its_intervals(gguf_model: Path, tmp_path: Path) -> None:
    import psutil

    measure = [sys.executable, "-m", "tuner", "measure", "--engine", "llamacpp",
               "--workload", str(REPO / "tests" / "data" / "workload-llamacpp-ci.yaml"),
               "--model", str(gguf_model), "--repeats", "2"]
    stopped = subprocess.Popen([*measure, "--out", str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    kept: dict[str, Any] = {}
    while not kept.get("repeats") and time.monotonic() < deadline:
        time.sleep(0.5)
        found = list(tmp_path.glob("measure-llamacpp-workload-llamacpp-ci-*/measure.json"))
        kept = json.loads(found[0].read_text()) if found else {}
    # In the second start. SIGTERM, not SIGINT: a test run started in the background by a
    # shell (`nohup ... &`) ignores SIGINT, and so does every process it starts.
    stopped.send_signal(signal.SIGTERM)
    stopped.communicate(timeout=120)
    assert stopped.returncode == 130
    assert len(kept["repeats"]) == 1
    assert kept["complete"] is False
    folder = found[0].parent
    assert not [p.info for p in psutil.process_iter(["name", "cmdline"])
                if "llama-server" in " ".join(p.info["cmdline"] or [])
                and str(gguf_model) in " ".join(p.info["cmdline"] or [])]

    done = subprocess.run([*measure, "--resume", str(folder)], capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((folder / "measure.json").read_text())
    assert report["complete"] is True
    assert report["resumed"] == 1
    assert report["looks"] == 1  # the plan it went on with was the one it was stopped in
    assert report["repeats"][0] == kept["repeats"][0]
    assert "2 fresh starts; 1 of them measured before" in done.stdout
    starts = report["repeats"]
    assert [s["outcome"] for s in starts] == ["ok", "ok"]
    brackets = []
    for s in starts:
        warm = s["capacity"]["warmup"]
        assert warm["stable"], warm
        assert len(warm["rounds"]) >= 2
        assert s["timing"]["warmup_s"] > 0
        found = s["capacity"]["estimate"]
        assert found["low"] <= found["load"] <= (found["high"] or found["load"])
        assert s["max_load"] == found["load"]
        passed = s["capacity"]["best"]
        assert passed["ttft_ms"]["p95_low"] is not None  # every step's p95 has its interval
        brackets.append((found["low"], found["high"] or float("inf")))
    (a_low, a_high), (b_low, b_high) = brackets
    assert a_low <= b_high
    assert b_low <= a_high
    # A start whose capacity is only a lower bound (no load failed within the two steps of
    # workload-llamacpp-ci) never enters the spread: bracketed starts and bounds make up the two.
    assert (report["capacity"]["n"] if report["capacity"] else 0) + report["bounds"] == 2
    if report["bounds"] == 0:
        assert report["capacity"]["cv"] is not None
        assert "capacity (req/s):" in done.stdout
        assert "CV" in done.stdout
    else:
        assert f"{report['bounds']} of 2 starts found no load that failed" in done.stdout
