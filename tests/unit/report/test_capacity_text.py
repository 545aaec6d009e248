"""A capacity result says its bracket and why the search stopped, with the load's unit."""

from __future__ import annotations

from tests.unit.fakes.summaries import fake_summary
from tuner.measurement import CapacityEstimate, CapacityResult
from tuner.report.capacity_text import capacity_headline, stop_reason
from tuner.workload import CapacitySearch


def result(stopped_by: str, *, high: float | None) -> CapacityResult:
    steps = [fake_summary(4, True), fake_summary(8, True)]
    if high is not None:
        steps.append(fake_summary(high, False))
    estimate = CapacityEstimate(load=11.2 if high else 8, low=8, high=high,
                                binding="ttft_p95_ms" if high else None,
                                interpolated=high is not None, output_tokens_per_s=1,
                                cost_per_m_output_tokens=1)
    return CapacityResult(steps=steps, best=steps[1], lowest_failing_load=high,
                          stopped_by=stopped_by, estimate=estimate)


def test_a_budget_cut_bracket_is_shown_with_both_ends() -> None:
    c = result("max_steps", high=16)
    assert capacity_headline(c, "req/s") == (
        "capacity: 11.2 req/s (interpolated; binding: ttft_p95_ms), between 8 req/s (passed) "
        "and 16 req/s (failed)")
    assert stop_reason(c, CapacitySearch(max_steps=3), "req/s") == (
        "search stopped after 3 steps: the step budget was spent (capacity.max_steps: 3) "
        "before the interval was within the resolution (±5%)")


def test_a_resolved_search_shows_its_interval() -> None:
    from tuner.metrics import CapacityInterval

    c = result("resolved", high=12)
    assert c.estimate is not None
    c.estimate.interval = CapacityInterval(load=11.2, low=10.7, high=12, binding="ttft_p95_ms",
                                           steps=6)
    assert capacity_headline(c, "req/s") == (
        "capacity: 11.2 req/s (10.7-12), 95% interval from 6 steps; binding: ttft_p95_ms")
    assert stop_reason(c, CapacitySearch(resolution=0.05), "req/s") == (
        "search stopped after 3 steps: the interval is within ±5% of the capacity")


def test_no_failing_load_is_a_lower_bound() -> None:
    c = result("max_time", high=None)
    assert capacity_headline(c, "concurrent requests") == (
        "capacity: at least 8 concurrent requests (passed there; no load that failed was "
        "found)")
    assert stop_reason(c, CapacitySearch(max_time_s=60), "concurrent requests").endswith(
        "the time budget was spent (capacity.max_time_s: 60) before any load failed: the "
        "capacity may be higher")


def test_nothing_passed() -> None:
    c = CapacityResult(steps=[fake_summary(2, False), fake_summary(1, False)], best=None,
                       lowest_failing_load=1, stopped_by="min_load")
    assert capacity_headline(c, "req/s") == (
        "capacity: no load met the SLOs (the lowest tried, 1 req/s, failed)")
    assert stop_reason(c, CapacitySearch(min_load=1), "req/s").endswith(
        "the lowest load allowed failed (capacity.min_load: 1 req/s)")


def test_server_cache_hits_the_run_does_not_explain_are_warned() -> None:
    from tuner.loadgen import ServerMetrics
    from tuner.report.bench_tables import prefix_cache_warning

    def run(hit: float, own: float):  # type: ignore[no-untyped-def]
        return fake_summary(4, True).model_copy(update={
            "server": ServerMetrics(samples=5, prefix_cache_hit_rate=hit),
            "own_prefix_share": own})

    assert prefix_cache_warning([run(0.3, 0.28)]) is None
    warning = prefix_cache_warning([run(0.31, 0.0)])
    assert warning is not None
    assert warning.startswith("the server's prefix cache hit 31.0% of prompt tokens at load 4 "
                              "req/s; the run's own sharing explains 0.0%: it held prompts "
                              "from before the run")
