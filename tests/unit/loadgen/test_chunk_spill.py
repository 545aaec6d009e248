"""A finished record's chunks moved to disk read back as the same values."""

from __future__ import annotations

import copy
import pickle
import tempfile

import pytest

from tests.sse_server import sse_server
from tuner.loadgen import RequestRecord, event_loop
from tuner.loadgen.chunk_spill import ChunkSpill, SpillingProgress
from tuner.loadgen.client import ServerCaps
from tuner.loadgen.packed_chunks import PackedTimes, StoredCounts, StoredTimes
from tuner.loadgen.runner import Runner
from tuner.metrics import summarise
from tuner.workload import PromptSynth, RequestFactory, Workload


def finished(index: int, times: list[int], counts: list[int]) -> RequestRecord:
    rec = RequestRecord(index=index, class_name="c", prefix_group=None, input_tokens=8,
                        planned_output_tokens=len(times), scheduled_ns=0, sent_ns=0)
    for at, k in zip(times, counts, strict=True):
        rec.add_chunk(at, k)
    rec.first_token_ns, rec.done_ns = times[0], times[-1]
    rec.seal()
    return rec


def stream(n: int, step: int = 5_000_000) -> list[int]:
    return [10**12 + i * step + (i * 7919) % 1000 for i in range(n)]


def test_spilled_chunks_read_back_the_same() -> None:
    spill = ChunkSpill()
    times, counts = stream(128), [1 + i % 3 for i in range(128)]
    recs = [finished(i, times, counts) for i in range(3)]
    twin = finished(9, times, counts)
    for rec in recs:
        spill.keep(rec)
    rec = recs[1]
    assert isinstance(rec.chunk_ns, StoredTimes)
    assert isinstance(rec.chunk_tokens, StoredCounts)
    assert spill.size == 3 * (127 * 4 + 128)
    assert list(rec.chunk_ns) == times
    assert rec.chunk_ns == times
    assert len(rec.chunk_ns) == 128
    assert rec.chunk_ns[-1] == times[-1]
    assert rec.chunk_ns[5] == times[5]
    assert list(rec.chunk_tokens) == counts
    assert rec.chunk_tokens[3] == counts[3]
    assert rec.itl_ns().tolist() == twin.itl_ns().tolist()
    assert rec.generated == twin.generated
    back = pickle.loads(pickle.dumps(rec))  # a copy carries its values, not the file
    assert isinstance(back.chunk_ns, PackedTimes)
    assert isinstance(back.chunk_tokens, bytes)
    assert back.chunk_ns == times
    assert list(back.chunk_tokens) == counts
    assert copy.deepcopy(rec).chunk_ns == times
    rec.add_chunk(times[-1] + 9, 1)  # a stored record can grow again, in memory
    assert list(rec.chunk_ns) == [*times, times[-1] + 9]


def test_ones_and_short_streams_stay_in_memory() -> None:
    spill = ChunkSpill()
    ones = finished(0, stream(128), [1] * 128)
    short = finished(1, stream(4), [2, 1, 1, 3])
    shared = ones.chunk_tokens
    spill.keep(ones)
    spill.keep(short)
    assert ones.chunk_tokens is shared
    assert isinstance(ones.chunk_ns, StoredTimes)
    assert isinstance(short.chunk_ns, PackedTimes)
    assert spill.size == 127 * 4


def test_a_spill_that_cannot_write_keeps_chunks_in_memory(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    spill = ChunkSpill()
    rec = finished(0, stream(128), [2] * 128)
    spill.keep(rec)
    assert isinstance(rec.chunk_ns, PackedTimes)
    assert list(rec.chunk_tokens) == [2] * 128
    assert spill.failed is not None
    assert "FileNotFoundError" in spill.failed


def test_progress_hooks_see_a_record_before_its_chunks_move() -> None:
    seen: list[str] = []

    class Shown:
        def request_sent(self, rec: RequestRecord) -> None:
            seen.append("sent")

        def request_done(self, rec: RequestRecord) -> None:
            seen.append(type(rec.chunk_ns).__name__)

        def finished(self) -> None:
            seen.append("finished")

    hooks = SpillingProgress(Shown(), ChunkSpill())
    rec = finished(0, stream(64), [1] * 64)
    hooks.request_sent(rec)
    hooks.request_done(rec)
    hooks.finished()
    assert seen == ["sent", "PackedTimes", "finished"]
    assert isinstance(rec.chunk_ns, StoredTimes)


@pytest.mark.slow
def test_a_runs_finished_requests_keep_their_chunks_on_disk(synth: PromptSynth) -> None:
    w = Workload.model_validate({
        "model": "tiny-llama",
        "classes": [{"name": "c", "weight": 1, "input": {"dist": "fixed", "value": 16},
                     "output": {"dist": "fixed", "value": 40}}],
        "arrival": {"process": "poisson", "rate": 40}, "stop": {"requests": 30}, "seed": 3,
        "slo": {"ttft_p95_ms": 5000, "itl_p95_ms": 5000}, "cost": {"usd_per_hour": 1.0}})
    with sse_server(gap_s=0.001) as url:
        runner = Runner(url, w, RequestFactory(w, synth), ServerCaps(), workers=1)
        try:
            outcome = event_loop.run(runner.run())
        finally:
            runner.close()
    assert all(r.ok for r in outcome.records), {r.error for r in outcome.records}
    assert all(isinstance(r.chunk_ns, StoredTimes) for r in outcome.records)
    in_memory = pickle.loads(pickle.dumps(outcome))  # the same records, chunks in memory
    assert not any(isinstance(r.chunk_ns, StoredTimes) for r in in_memory.records)
    assert ([r.itl_ns().tolist() for r in outcome.records]
            == [r.itl_ns().tolist() for r in in_memory.records])
    assert summarise(outcome, w, ServerCaps()) == summarise(in_memory, w, ServerCaps())
