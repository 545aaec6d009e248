"""Valid values that are probably mistakes are named before minutes are spent on them."""

from __future__ import annotations

from typing import Any

from tuner.workload.models import Workload
from tuner.workload.plausibility import implausible, implausible_run


def workload(**over: Any) -> Workload:
    base: dict[str, Any] = {
        "model": "m", "classes": [{"name": "c", "weight": 1,
                                   "input": {"dist": "fixed", "value": 10},
                                   "output": {"dist": "fixed", "value": 5}}],
        "arrival": {"process": "poisson", "rate": 2}, "stop": {"duration_s": 30},
        "slo": {"ttft_p95_ms": 500, "itl_p95_ms": 50}, "cost": {"usd_per_hour": 1}}
    base.update(over)
    return Workload.model_validate(base)


def test_a_sensible_workload_has_nothing_to_say() -> None:
    assert implausible(workload()) == []
    assert implausible_run(workload()) == []


def test_slos_in_seconds_written_as_milliseconds() -> None:
    found = implausible(workload(slo={"ttft_p95_ms": 1, "itl_p95_ms": 0.2, "e2e_p99_ms": 5}))
    assert found == [
        "slo.ttft_p95_ms is 1 ms, faster than any engine serves: seconds written as "
        "milliseconds? (1 s is 1000)",
        "slo.itl_p95_ms is 0.2 ms, faster than any engine serves: seconds written as "
        "milliseconds? (0.2 s is 200)",
        "slo.e2e_p99_ms is 5 ms, faster than any engine serves: seconds written as "
        "milliseconds? (5 s is 5000)"]


def test_a_rate_the_stop_condition_cannot_send() -> None:
    (burst,) = implausible_run(workload(arrival={"process": "poisson", "rate": 500},
                                        stop={"requests": 20}))
    assert burst.startswith("500 req/s with stop.requests 20: every request goes out in 0.04 s")
    (few,) = implausible_run(workload(arrival={"process": "constant", "rate": 0.25},
                                      stop={"duration_s": 4}))
    assert few.startswith("0.25 req/s for 4 s sends about 1 requests, too few")
    (closed,) = implausible_run(workload(arrival={"process": "concurrency", "concurrency": 64},
                                         stop={"requests": 20}))
    assert closed.startswith("arrival.concurrency 64 with stop.requests 20: the run never has")
