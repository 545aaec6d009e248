"""Reading an engine's Prometheus text: counts summed over data-parallel ranks, shares averaged."""

from __future__ import annotations

from tuner.loadgen.scraper import parse_sample, summarise_scrapes

TWO_RANKS = """# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="1",model_name="m"} 4.0
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="m"} 2.0
vllm:num_preemptions_total{engine="1",model_name="m"} 1.0
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="m"} 0.0
"""


def test_ranks_add_up_their_queues_and_share_their_cache_usage() -> None:
    values = parse_sample(TWO_RANKS)
    assert values["vllm:kv_cache_usage_perc"] == 0.375
    assert values["vllm:num_requests_waiting"] == 7.0
    assert values["vllm:num_preemptions_total"] == 3.0
    assert "vllm:iteration_tokens_total_bucket" not in values  # not read: never parsed


def test_counters_are_differences_and_gauges_mean_and_max() -> None:
    later = TWO_RANKS.replace("} 2.0", "} 12.0").replace("} 0.5", "} 0.9")
    m = summarise_scrapes([parse_sample(TWO_RANKS), parse_sample(later)])
    assert m is not None
    assert m.preemptions == 10.0
    assert m.kv_cache_usage_max == 0.575
    assert m.kv_cache_usage_mean == (0.375 + 0.575) / 2
