import numpy as np
import pytest

from tuner.loadgen.guard import SloGuard, lost_after
from tuner.loadgen.records import RequestRecord

MS = 1_000_000


@pytest.mark.parametrize("n", [1, 2, 7, 20, 21, 100, 257])
def test_lost_after_is_exactly_when_p95_must_exceed(n: int) -> None:
    m = lost_after(n)
    bound = 1.0
    over = np.r_[np.zeros(n - m), np.full(m, 2.0)]
    assert np.percentile(over, 95) > bound
    # One fewer late request, each only just late: the p95 can still hold.
    fewer = np.r_[np.zeros(n - m + 1), np.full(m - 1, bound + 1e-9)]
    assert np.percentile(fewer, 95) <= bound


def rec(i: int, sent: int, first: int | None = None, error: str | None = None) -> RequestRecord:
    r = RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=1,
                      planned_output_tokens=1, scheduled_ns=sent, sent_ns=sent)
    r.first_token_ns, r.error = first, error
    return r


def test_guard_stops_once_too_many_requests_are_late() -> None:
    guard = SloGuard(planned=20, ttft_bound_ns=100 * MS, max_error_rate=0.5)
    records = [rec(i, 0, first=10 * MS) for i in range(18)]
    assert guard.check(records, 50 * MS) is None
    records += [rec(18, 0), rec(19, 0)]  # still waiting, past the bound at t=200ms
    assert guard.check(records, 200 * MS) is not None


def test_guard_stops_on_errors() -> None:
    guard = SloGuard(planned=100, ttft_bound_ns=10**12, max_error_rate=0.01)
    records = [rec(i, 0, first=1, error="HTTP 500") for i in range(2)]
    assert "errors" in (guard.check(records, 1) or "")


def test_guard_sees_a_queue_that_only_grows() -> None:
    guard = SloGuard(planned=None, ttft_bound_ns=10**12, max_error_rate=1.0, window=5,
                     min_growth=4)
    records: list[RequestRecord] = []
    reason = None
    for step in range(6):
        records += [rec(len(records) + k, 0) for k in range(3)]
        reason = guard.check(records, step)
    assert reason is not None
    assert "queue only grows" in reason
