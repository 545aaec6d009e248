"""The progress display's running p95s: within a bin of the exact figure, in constant memory."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.loadgen import RequestRecord
from tuner.ui import RunCounters
from tuner.ui.run_counters import BinnedQuantile


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binned_p95_is_within_a_bin_of_the_exact_one(seed: int) -> None:
    values = np.random.default_rng(seed).lognormal(2.5, 0.8, 20_000)
    binned = BinnedQuantile()
    for chunk in np.array_split(values, 200):
        binned.add(chunk.tolist())
    exact = float(np.sort(values)[int(np.ceil(0.95 * values.size)) - 1])
    assert binned.quantile(0.95) == pytest.approx(exact, rel=0.001)
    assert binned.n == values.size


def test_memory_does_not_grow_with_the_values() -> None:
    binned = BinnedQuantile()
    before = binned.counts.nbytes
    binned.add([0.0, 1e-9, 5.0, 1e9])  # zero and out-of-range values land in the end bins
    assert binned.counts.nbytes == before
    assert binned.counts.sum() == 4
    assert BinnedQuantile().quantile(0.95) is None


def test_counters_show_the_p95s_of_finished_requests() -> None:
    counters = RunCounters("step 1", planned=2, on_finished=lambda _: None)
    assert counters.cells()[-2:] == ["p95 TTFT -", "p95 ITL -"]
    rec = RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=4,
                        planned_output_tokens=3, scheduled_ns=0, sent_ns=0,
                        first_token_ns=20_000_000, done_ns=40_000_000)
    for at in (20_000_000, 30_000_000, 40_000_000):
        rec.chunk_ns.append(at)
        rec.chunk_tokens.append(1)
    counters.request_sent(rec)
    counters.request_done(rec)
    assert counters.cells() == ["sent 1/2", "done 1", "errors 0", "p95 TTFT 20.0 ms",
                                "p95 ITL 10.0 ms"]
