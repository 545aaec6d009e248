"""Steps are sized by statistics: long enough for min_requests, at least the stated duration,
at most max_step_s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuner.loadgen import ServerCaps
from tuner.measurement.bench_session import Bench
from tuner.workload import Workload


def bench(**capacity: Any) -> Bench:
    w = Workload.model_validate({
        "model": "m", "classes": [{"name": "c", "weight": 1, "input": {"dist": "fixed",
                                                                       "value": 8},
                                   "output": {"dist": "fixed", "value": 4}}],
        "arrival": {"process": "poisson", "rate": 2}, "stop": {"duration_s": 8},
        "slo": {"ttft_p95_ms": 500, "itl_p95_ms": 50}, "cost": {"usd_per_hour": 1},
        "capacity": capacity}, context={"base_dir": Path(".")})
    return Bench(w, "http://x", ServerCaps(), runner=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("load", "seconds"), [(0.5, 120.0), (1.0, 60.0), (2.0, 30.0),
                                               (30.0, 8.0)])
def test_a_step_lasts_long_enough_for_its_requests(load: float, seconds: float) -> None:
    assert bench(min_requests=60, max_step_s=120).step_duration(load) == seconds


def test_the_stated_duration_is_a_lower_bound() -> None:
    assert bench(min_requests=10, step_duration_s=20).step_duration(5.0) == 20
