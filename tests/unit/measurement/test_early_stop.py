"""The capacity search's early stop: lost only with high confidence, never on noise."""

from __future__ import annotations

from tuner.loadgen import RequestRecord
from tuner.measurement.early_stop import SloGuard

MS = 1_000_000


def rec(i: int, sent: int, first: int | None = None, done: int | None = None,
        error: str | None = None, warmup: bool = False) -> RequestRecord:
    return RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=1,
                         planned_output_tokens=1, scheduled_ns=sent, sent_ns=sent,
                         first_token_ns=first, done_ns=done, error=error, warmup=warmup)


def test_two_slow_first_tokens_in_sixteen_do_not_lose_the_step() -> None:
    """The engine's first requests after a start are slow; that is noise, not a lost p95."""
    guard = SloGuard(ttft_bound_ns=100 * MS, max_error_rate=0.01)
    records = [rec(0, 0, first=900 * MS), rec(1, 10 * MS, first=800 * MS)]
    records += [rec(i, i * 100 * MS, first=i * 100 * MS + 20 * MS) for i in range(2, 16)]
    assert guard.check(records, 2_000 * MS) is None


def test_a_handful_of_slow_requests_is_not_enough_to_judge() -> None:
    guard = SloGuard(ttft_bound_ns=100 * MS, max_error_rate=0.01)
    records = [rec(i, 0, first=500 * MS) for i in range(5)]
    assert guard.check(records, 600 * MS) is None


def test_a_hopeless_load_is_stopped_within_a_dozen_requests() -> None:
    guard = SloGuard(ttft_bound_ns=100 * MS, max_error_rate=0.01)
    records = [rec(i, i * 50 * MS) for i in range(12)]  # nobody got a first token
    reason = guard.check(records, 12 * 50 * MS + 200 * MS)
    assert reason is not None
    assert "p95 lost with 99% confidence" in reason


def test_warmup_requests_never_count() -> None:
    guard = SloGuard(ttft_bound_ns=100 * MS, max_error_rate=0.01)
    records = [rec(i, 0, first=900 * MS, warmup=True) for i in range(20)]
    assert guard.check(records, 10**10) is None


def test_errors_stop_only_when_the_rate_is_surely_over() -> None:
    guard = SloGuard(ttft_bound_ns=10**12, max_error_rate=0.05)
    ok = [rec(i, 0, first=1, done=2) for i in range(18)]
    assert guard.check(ok + [rec(18, 0, error="HTTP 500"), rec(19, 0, error="HTTP 500")],
                       3) is None
    many = ok + [rec(100 + i, 0, error="HTTP 500") for i in range(8)]
    assert "errors" in (guard.check(many, 3) or "")


def test_the_normal_ramp_of_an_open_loop_run_is_not_a_growing_queue() -> None:
    """At 4 req/s with 2 s latency, about 8 requests are in flight in the steady state; a run
    ramps from 0 to there, and that is not overload."""
    guard = SloGuard(ttft_bound_ns=10**12, max_error_rate=1.0, offered_rps=4.0, window=5)
    records: list[RequestRecord] = []
    reason = None
    for step in range(12):
        t = step * 250 * MS
        records.append(rec(step, t, first=t + MS))
        for r in records:
            if r.done_ns is None and t - r.sent_ns >= 2_000 * MS:
                r.done_ns = r.sent_ns + 2_000 * MS
        if step == 0:
            records.append(rec(99, -2_000 * MS, first=-1_999 * MS, done=0))  # one completed
        reason = reason or guard.check(records, t)
    assert reason is None


def test_a_queue_far_above_its_steady_state_is_overload() -> None:
    guard = SloGuard(ttft_bound_ns=10**12, max_error_rate=1.0, offered_rps=4.0, window=5)
    records = [rec(0, 0, first=MS, done=500 * MS)]  # latency 0.5 s: steady state about 2
    reason = None
    for step in range(8):
        records += [rec(len(records) + k, step * MS, first=step * MS + 1) for k in range(3)]
        reason = guard.check(records, step * MS)
    assert reason is not None
    assert "queue only grows" in reason
