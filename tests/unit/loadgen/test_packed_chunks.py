"""A finished request's chunk times and counts, packed: the same values, smaller."""

from __future__ import annotations

import pickle
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuner.loadgen import RequestRecord
from tuner.loadgen.packed_chunks import GAP_LIMIT, PackedTimes, packed_counts, packed_times


def record(times: list[int], counts: list[int]) -> RequestRecord:
    rec = RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=8,
                        planned_output_tokens=len(times), scheduled_ns=0, sent_ns=0)
    for at, k in zip(times, counts, strict=True):
        rec.add_chunk(at, k)
    if times:
        rec.first_token_ns, rec.done_ns = times[0], times[-1]
    return rec


@given(st.lists(st.integers(0, GAP_LIMIT), min_size=2, max_size=60),
       st.integers(0, 2**50))
def test_packed_times_are_the_times(gaps: list[int], first: int) -> None:
    times = [first]
    for g in gaps:
        times.append(times[-1] + g)
    packed = packed_times(array("q", times))
    assert isinstance(packed, PackedTimes)
    assert list(packed) == times
    assert len(packed) == len(times)
    assert [packed[i] for i in range(-len(times), len(times))] == times + times
    assert packed[1:3] == times[1:3]
    assert packed == times
    assert array("q", times) == packed
    assert pickle.loads(pickle.dumps(packed)) == times
    with pytest.raises(IndexError):
        packed[len(times)]


def test_a_gap_past_four_seconds_or_backwards_keeps_eight_byte_times() -> None:
    for times in ([0, GAP_LIMIT + 1], [10, 5], [7]):
        kept = packed_times(times)
        assert isinstance(kept, array)
        assert list(kept) == times


def test_a_sealed_record_is_smaller_and_reads_the_same() -> None:
    times = [10**12 + i * 5_000_000 + (i % 7) for i in range(128)]
    rec, twin = record(times, [1] * 128), record(times, [1] * 128)
    grown = len(rec.chunk_ns) * rec.chunk_ns.itemsize  # type: ignore[attr-defined]
    rec.seal()
    assert len(rec.chunk_ns._gaps) < grown / 2  # type: ignore[attr-defined]
    assert rec.chunk_ns[0] is rec.first_token_ns
    assert rec.chunk_ns[-1] == rec.done_ns
    assert rec.chunk_tokens is packed_counts([1] * 128)  # one shared object a length
    assert packed_counts(pickle.loads(pickle.dumps(rec.chunk_tokens))) is rec.chunk_tokens
    assert rec.itl_ns().tolist() == twin.itl_ns().tolist()
    assert rec.generated == twin.generated == 128
    assert rec.tpot_ns() == twin.tpot_ns()


def test_counts_past_a_byte_stay_as_they_are_and_a_sealed_record_can_grow_again() -> None:
    assert list(packed_counts([1, 300])) == [1, 300]
    rec = record([1, 2, 4], [0, 2, 1])
    rec.seal()
    assert rec.chunk_tokens == bytes([0, 2, 1])
    rec.add_chunk(9, 300)
    assert list(rec.chunk_ns) == [1, 2, 4, 9]
    assert list(rec.chunk_tokens) == [0, 2, 1, 300]
    assert rec.itl_ns().tolist() == [0.5, 0.5, 2.0, *[5 / 300] * 300]


@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 300)), min_size=0, max_size=40))
def test_itl_gaps_are_pythons_divisions_to_the_bit(chunks: list[tuple[int, int]]) -> None:
    times, at = [], 10**12
    for gap, _ in chunks:
        at += gap
        times.append(at)
    counts = [k for _, k in chunks]
    expected: list[float] = []
    for before, after, k in zip(times, times[1:], counts[1:], strict=False):
        expected.extend([(after - before) / max(1, k)] * max(1, k))
    rec = record(times, counts)
    assert rec.itl_ns().tolist() == expected
    rec.seal()
    assert rec.itl_ns().tolist() == expected
