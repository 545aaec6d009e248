"""Scrape an engine's Prometheus metrics during a run.

Gauges (KV-cache usage, queue length, running batch) are sampled every half second, or less
often when a scrape takes longer: a scrape costs the server the time it takes to answer, so
the interval is at least fifty times that (the engine spends at most 2% of the run answering),
and reported as mean and max; counters
(preemptions, prefix-cache hits and queries) are reported as the difference between the
last and the first scrape. Names are listed per engine below; values are summed over
label sets (DP ranks), except KV-cache usage, a share, which is averaged over them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel

from tuner.loadgen.route import plain_client

log = logging.getLogger(__name__)

GAUGES: dict[str, tuple[str, ...]] = {
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "sglang:token_usage"),
    "queue_length": ("vllm:num_requests_waiting", "sglang:num_queue_reqs",
                     "llamacpp:requests_deferred", "tgi_queue_size"),
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs",
                "llamacpp:requests_processing", "tgi_batch_current_size"),
}
COUNTERS: dict[str, tuple[str, ...]] = {
    # SGLang 0.5.6 has no retraction counter (num_retracted_requests_total is 0.5.7+); the sum
    # of its per-request retraction histogram counts the same for finished requests.
    "preemptions": ("vllm:num_preemptions_total", "sglang:num_retractions_sum"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "sglang:cached_tokens_total"),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "sglang:prompt_tokens_total"),
}
"""Per figure, the names engines expose it under at their pinned versions (checked against
engines/help/*-metrics.txt). llama-server no longer exposes KV-cache usage; TensorRT-LLM 1.0
exposes no Prometheus metrics (its trtllm_* metrics came in the 1.3 line)."""


class ServerMetrics(BaseModel):
    """What the server said about itself during the run (None: not exposed)."""

    samples: int
    kv_cache_usage_mean: float | None = None
    kv_cache_usage_max: float | None = None
    queue_length_mean: float | None = None
    queue_length_max: float | None = None
    running_mean: float | None = None
    running_max: float | None = None
    preemptions: float | None = None
    prefix_cache_hits: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hit_rate: float | None = None


_RATIOS = set(GAUGES["kv_cache_usage"])
"""Shares (0-1), averaged over label sets (one per data-parallel rank) rather than summed."""
_WANTED = tuple(n for names in (*GAUGES.values(), *COUNTERS.values()) for n in names)


def parse_sample(text: str) -> dict[str, float]:
    """Sum the samples we know by name from a Prometheus text exposition.

    Lines of other metrics are dropped before parsing: engines expose hundreds of histogram
    buckets, and parsing them all would stall the event loop that times requests.
    """
    wanted = "\n".join(line for line in text.splitlines()
                        if line.startswith(_WANTED) and not line.startswith("#"))
    values: dict[str, float] = {}
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(wanted + "\n"):
        for sample in family.samples:
            values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
            counts[sample.name] = counts.get(sample.name, 0) + 1
    for name in _RATIOS & values.keys():  # a usage share per data-parallel rank: their mean
        values[name] /= counts[name]
    return values


def _pick(values: dict[str, float], names: tuple[str, ...]) -> float | None:
    return next((values[n] for n in names if n in values), None)


def summarise_scrapes(scrapes: list[dict[str, float]]) -> ServerMetrics | None:
    if not scrapes:
        return None
    out: dict[str, float | int | None] = {"samples": len(scrapes)}
    for key, names in GAUGES.items():
        seen = [v for v in (_pick(s, names) for s in scrapes) if v is not None]
        if seen:
            out[f"{key}_mean"] = sum(seen) / len(seen)
            out[f"{key}_max"] = max(seen)
    for key, names in COUNTERS.items():
        first, last = _pick(scrapes[0], names), _pick(scrapes[-1], names)
        if first is not None and last is not None:
            out[key] = last - first
    hits, queries = out.get("prefix_cache_hits"), out.get("prefix_cache_queries")
    if hits is not None and queries:
        out["prefix_cache_hit_rate"] = hits / queries
    return ServerMetrics.model_validate(out)


async def wait_idle(url: str | None, *, timeout_s: float = 60.0, poll_s: float = 0.5,
                    pause_s: float = 2.0) -> bool:
    """Wait until the engine at ``url`` (its metrics) has no request running or waiting, so
    that what one run left behind (requests a stopped step abandoned, which the engine may
    still be working on) does not load the next. Without metrics, pause ``pause_s``.
    Returns whether the engine was seen idle."""
    running, waiting = GAUGES["running"], GAUGES["queue_length"]
    deadline = asyncio.get_running_loop().time() + timeout_s
    async with plain_client(url, httpx.Timeout(5.0)) as http:
        while url is not None:
            try:
                resp = await http.get(url)
            except httpx.HTTPError:
                break
            if resp.status_code != 200:
                break
            values = await asyncio.to_thread(parse_sample, resp.text)
            busy = [_pick(values, running), _pick(values, waiting)]
            if all(v is None for v in busy):
                break
            if sum(v or 0.0 for v in busy) == 0:
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(poll_s)
    await asyncio.sleep(pause_s)
    return False


_MISSING: set[str] = set()  # endpoints already reported missing: say so once, not every run


MIN_INTERVAL_S = 0.5
MAX_DUTY = 0.02
"""The most of the run's time the engine may spend answering scrapes."""


def next_interval(scrape_s: float, min_interval_s: float = MIN_INTERVAL_S,
                  max_duty: float = MAX_DUTY) -> float:
    """Seconds to the next scrape after one that took ``scrape_s``."""
    return max(min_interval_s, scrape_s / max_duty)


class MetricsScraper:
    """Polls ``url`` while running (see :func:`next_interval`); a missing endpoint disables
    it."""

    def __init__(self, url: str | None, min_interval_s: float = MIN_INTERVAL_S) -> None:
        self.url = url
        self.min_interval_s = min_interval_s
        self.interval_s = min_interval_s
        self.scrapes: list[dict[str, float]] = []
        self._task: asyncio.Task[None] | None = None
        self._http = plain_client(url, httpx.Timeout(5.0))

    async def scrape(self) -> None:
        if self.url is None:
            return
        try:
            t0 = time.perf_counter()
            resp = await self._http.get(self.url)
            self.interval_s = next_interval(time.perf_counter() - t0, self.min_interval_s)
            if resp.status_code != 200:
                level = logging.DEBUG if self.url in _MISSING else logging.INFO
                _MISSING.add(self.url)
                log.log(level, "metrics at %s answered HTTP %s; not scraping", self.url,
                        resp.status_code)
                self.url = None
                return
            # Parsing vLLM's exposition takes milliseconds: off the loop that stamps tokens.
            self.scrapes.append(await asyncio.to_thread(parse_sample, resp.text))
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("metrics scrape failed: %s", exc)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.scrape()

    async def __aenter__(self) -> MetricsScraper:
        await self.scrape()
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.scrape()
        await self._http.aclose()

    def summary(self) -> ServerMetrics | None:
        return summarise_scrapes(self.scrapes)
