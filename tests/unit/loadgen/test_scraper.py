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


def test_small_shares_keep_their_digits() -> None:
    from tuner.report import count, share

    assert share(0.0001) == "0.01%"
    assert share(0.00123) == "0.12%"
    assert share(0.0) == "0.0%"
    assert share(0.375) == "37.5%"
    assert count(0.25) == "0.25"
    assert count(12.0) == "12"


def test_scrapes_are_frequent_unless_a_scrape_is_slow() -> None:
    """Often when a scrape is cheap; a scrape that takes 50 ms waits 2.5 s (the engine spends
    2% of its time answering at most), against a real HTTP server."""
    import asyncio
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tuner.loadgen.scraper import MetricsScraper, next_interval

    assert next_interval(0.001) == 0.5
    assert next_interval(0.04) == 2.0
    delay = {"s": 0.0}

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay["s"])
            body = b"vllm:num_requests_running 2\n"
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"

    async def scrapes(run_s: float) -> int:
        async with MetricsScraper(url, min_interval_s=0.05) as scraper:
            await asyncio.sleep(run_s)
        return len(scraper.scrapes)

    try:
        # The first, at least one more, the last: 2 s leave room for scrapes of up to 40 ms (a
        # busy machine's), each followed by 50 times its time (0.6 s failed beside the engine
        # tests).
        assert asyncio.run(scrapes(2.0)) >= 3
        delay["s"] = 0.05  # each scrape 50 ms: one every 2.5 s at most
        assert asyncio.run(scrapes(0.6)) == 2  # the first and the last
    finally:
        server.shutdown()
