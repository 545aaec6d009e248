"""Several client processes in one run: every planned request once, in plan order, on time."""

from __future__ import annotations

import pytest

from tests.sse_server import sse_server
from tuner.loadgen import event_loop
from tuner.loadgen.client import ServerCaps
from tuner.loadgen.runner import Runner
from tuner.loadgen.workers import workers_for
from tuner.workload import PromptSynth, RequestFactory, Workload, is_warmup, send_offsets_ns


def workload() -> Workload:
    return Workload.model_validate({
        "model": "tiny-llama",
        "classes": [{"name": "c", "weight": 1, "input": {"dist": "fixed", "value": 16},
                     "output": {"dist": "fixed", "value": 8}}],
        "arrival": {"process": "poisson", "rate": 40}, "stop": {"requests": 60},
        "warmup": {"requests": 2}, "seed": 3,
        "slo": {"ttft_p95_ms": 5000, "itl_p95_ms": 5000}, "cost": {"usd_per_hour": 1.0}})


@pytest.mark.slow
def test_two_workers_merge_into_one_run_in_plan_order(synth: PromptSynth) -> None:
    w = workload()
    offsets = send_offsets_ns(w, None)
    assert offsets is not None
    with sse_server() as url:
        runner = Runner(url, w, RequestFactory(w, synth), ServerCaps(), workers=2)
        try:
            outcome = event_loop.run(runner.run())
        finally:
            runner.close()
    recs = outcome.records
    assert [r.index for r in recs] == list(range(len(offsets)))  # each once, in plan order
    assert all(r.ok for r in recs), {r.error for r in recs}
    assert all(r.generated == 8 for r in recs)
    assert [r.scheduled_ns for r in recs] == [int(o) for o in offsets]
    assert [r.warmup for r in recs] == [is_warmup(w, i, int(o)) for i, o in enumerate(offsets)]
    late_ms = sorted((r.sent_ns - r.scheduled_ns) / 1e6 for r in recs)
    assert late_ms[0] >= 0  # never sent before its time
    assert late_ms[-1] < 250  # on schedule (loose: a busy 2-core test machine)
    assert outcome.client_cpu is not None
    assert outcome.planned == 60


def test_the_default_is_one_process_per_fifteen_thousand_tokens_per_second() -> None:
    assert workers_for(3_000, 8) == 1
    assert workers_for(40_000, 8) == 3
    assert workers_for(300_000, 8) == 8   # no more than the generator's cores
    assert workers_for(30_000, 1) == 1
