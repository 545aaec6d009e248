"""Run summaries made up for unit tests of what consumes them."""

from __future__ import annotations

from tuner.metrics import RunSummary, SloVerdict, dist_ms


def fake_summary(load: float, passed: bool) -> RunSummary:
    d = dist_ms([1.0])
    return RunSummary(
        load=load, planned=1, requests=1, completed=1, errors=0, error_rate=0.0, duration_s=1,
        stopped_early=None, ttft_ms=d, itl_ms=d, tpot_ms=d, e2e_ms=d, request_throughput=load,
        input_token_throughput=0, output_token_throughput=load * 10, total_token_throughput=0,
        goodput_rps=load, slo=SloVerdict(passed=passed, checks=[]), accelerators=1,
        usd_per_hour=1, cost_per_m_output_tokens=1 / load, cost_per_m_total_tokens=None,
        output_lengths_forced=True, output_length_match=1, input_length_match=1,
        chat_template_tokens=None, dispatch_lag_ms=d, server=None, error_samples=[])
