"""Keeping up: delivered against offered output tokens over the steady window."""

from __future__ import annotations

import pytest

from tuner.loadgen import RequestRecord
from tuner.metrics.keep_up import keep_up

S = 1_000_000_000


def served(i: int, sent: float, latency: float, tokens: int = 10) -> RequestRecord:
    start, end = int(sent * S), int((sent + latency) * S)
    chunks = [start + (end - start) * (k + 1) // tokens for k in range(tokens)]
    return RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=8,
                         planned_output_tokens=tokens, scheduled_ns=start, sent_ns=start,
                         first_token_ns=chunks[0], done_ns=end, chunk_ns=chunks,
                         chunk_tokens=[1] * tokens, output_tokens=tokens)


def falling_behind() -> list[RequestRecord]:
    """Offered 4 req/s, served 3 req/s for a minute: each request waits longer than the one
    before."""
    records, free = [], 0.0
    for i in range(240):
        sent = i * 0.25
        start = max(sent, free)
        free = start + 1 / 3
        records.append(served(i, sent, free - sent))
    return records


def test_an_engine_that_keeps_up_delivers_what_was_offered() -> None:
    records = [served(i, i * 0.25, 1.0) for i in range(120)]  # 4 req/s, 1 s each
    found = keep_up(records)
    assert found is not None
    assert found.ratio == pytest.approx(1.0, abs=0.05)
    assert found.steady_in_flight == pytest.approx(4.0, rel=0.05)
    assert found.in_flight <= found.backlog_limit()


def test_an_engine_that_falls_behind_delivers_less_and_builds_a_backlog() -> None:
    records = falling_behind()
    found = keep_up(records)
    assert found is not None
    assert found.ratio < 0.9
    assert found.in_flight > found.backlog_limit()


def test_too_few_requests_are_not_judged() -> None:
    assert keep_up([served(0, 0, 1), served(1, 0.1, 1)]) is None


def test_a_short_step_is_not_failed_by_where_its_window_falls() -> None:
    """Ten requests that an engine serves as offered, one of them long: the window's edges
    cut its tokens off, which is no sign of falling behind."""
    records = [served(i, i * 0.5, 1.0, tokens=60 if i == 6 else 10) for i in range(10)]
    records[6] = served(6, 3.0, 4.0, tokens=60)
    found = keep_up(records)
    assert found is not None
    assert found.ratio < 0.9  # by the window alone, it would fail
    assert found.ratio_high() >= 0.9


def test_a_long_step_that_falls_behind_still_fails_with_the_allowance() -> None:
    records = falling_behind()
    found = keep_up(records)
    assert found is not None
    assert found.ratio_high() < 0.9
