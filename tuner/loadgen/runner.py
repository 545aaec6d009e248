"""Run a workload once at one load: dispatch, watch, collect.

Open loop: every request goes at its precomputed send time on one monotonic
clock, whatever the server does. Closed loop: ``concurrency`` workers each send
their next request when the previous one ends. Prompts are built before the
clock starts (open loop) so building them never delays a send.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tuner.loadgen.chunk_spill import ChunkSpill, SpillingProgress
from tuner.loadgen.client import ServerCaps, StreamClient
from tuner.loadgen.progress import NULL_PROGRESS, Progress, RunProgress
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import DIRECT, Route
from tuner.loadgen.saturation import LoopLag, saturation
from tuner.loadgen.schedule import sleep_until
from tuner.loadgen.scraper import MetricsScraper, ServerMetrics
from tuner.loadgen.workers import ClientSpec, WorkerPool, workers_for
from tuner.workload import (
    NS,
    ConcurrencyArrivals,
    PlannedRequest,
    RequestFactory,
    Workload,
    is_warmup,
    open_loop_plan,
    own_prefix_share,
)

MAX_POOL = 20_000
SHARD_LEAD_NS = 200_000_000
"""With worker processes, the run's clock starts this far ahead: time to hand out the shards."""

log = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    """The records of one run and how it ended."""

    load: float
    records: list[RequestRecord]
    planned: int | None
    wall_ns: int
    stopped_early: str | None
    server: ServerMetrics | None
    open_loop: bool = True
    client_cpu: float | None = None
    """CPU the load generator used during the run, in cores (1.0: one core saturated)."""
    loop_lag_p99_ms: float | None = None
    """How late the generator's event loop woke up its timers, p99 over the run."""
    client_saturated: str | None = None
    """Why the generator itself was the bottleneck (see ``saturation``), or None."""
    own_prefix_share: float | None = None
    """Share of the run's prompt text its own earlier prompts explain to a prefix cache."""


Dispatch = Callable[[StreamClient, int, RunProgress], Awaitable[None]]


class StopCheck(Protocol):
    """Looked at a few times per second during a run: a reason to stop it now, or None."""

    def check(self, records: list[RequestRecord], now_ns: int) -> str | None: ...


class Runner:
    """Runs the workload against one endpoint; reusable across loads (capacity search)."""

    def __init__(
        self,
        url: str,
        workload: Workload,
        factory: RequestFactory,
        caps: ServerCaps,
        *,
        metrics_url: str | None = None,
        progress: Progress = NULL_PROGRESS,
        workers: int | None = None,
        route: Route = DIRECT,
    ) -> None:
        self.url = url
        self.route = route
        """The httpx transport and proxy the client uses."""
        self.workload = workload
        self.factory = factory
        self.caps = caps
        self.metrics_url = metrics_url
        self.progress = progress
        self.workers = workers
        """Client processes for open-loop runs; None: as many as the planned token rate
        needs (``workers_for``), at most one per core of the load generator."""
        self.partial: list[RequestRecord] = []
        self._pool: WorkerPool | None = None
        self._spill = ChunkSpill()
        """Where finished requests' chunks go, for every run of this runner."""

    def close(self) -> None:
        """End the worker processes, if any were started."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _pool_of(self, n: int) -> WorkerPool | None:
        if n <= 1:
            return None
        if self._pool is None or self._pool.size != n:
            self.close()
            self._pool = WorkerPool(n)
        return self._pool

    def _client_spec(self, pool: int) -> ClientSpec:
        w = self.workload
        return ClientSpec(url=self.url, model=w.model, api=w.api, caps=self.caps,
                          pool_size=min(MAX_POOL, max(16, pool)), timeout_s=w.request_timeout_s,
                          temperature=w.temperature, route=self.route)

    def _client(self, pool: int) -> StreamClient:
        return self._client_spec(pool).client()

    async def run(self, load: float | None = None, *, duration_s: float | None = None,
                  epoch: int = 0, stop_check: StopCheck | None = None,
                  label: str | None = None) -> RunOutcome:
        """One run at ``load`` (default: the workload's own) for the workload's stop or
        ``duration_s``. ``epoch`` selects a fresh set of prompts. ``stop_check`` may end the
        run early (the capacity search passes one; a plain run measures what it was asked).
        ``label`` names the run in progress displays (default: its load)."""
        w = self.workload
        arrival = w.arrival if load is None else w.arrival.with_load(load)
        shaped = w.model_copy(update={"arrival": arrival})
        records: list[RequestRecord] = []
        self.partial = records
        sharded: WorkerPool | None = None
        prompts: dict[int, str] = {}
        if isinstance(arrival, ConcurrencyArrivals):
            planned = w.stop.requests if duration_s is None else None
            dispatch = await self._closed_loop(shaped, arrival.concurrency, records, epoch,
                                               duration_s)
            pool = arrival.concurrency
        else:
            offsets, reqs = await asyncio.to_thread(open_loop_plan, self.factory, shaped,
                                                    duration_s, epoch)
            planned = sum(1 for i, off in enumerate(offsets) if not is_warmup(w, i, int(off)))
            prompts = {r.index: r.prompt for r in reqs}
            pool = len(reqs)
            span_s = max(1e-9, float(offsets[-1]) / NS) if len(offsets) else 1.0
            n = self.workers or workers_for(sum(r.output_tokens for r in reqs) / span_s,
                                            len(os.sched_getaffinity(0)))
            sharded = self._pool_of(n)
            if sharded is None:
                dispatch = self._open_loop(shaped, reqs, [int(o) for o in offsets], records,
                                           epoch)
            else:
                dispatch = self._sharded(sharded, shaped, reqs, [int(o) for o in offsets],
                                         records, epoch)
        shown = SpillingProgress(
            self.progress.run(label or f"load {arrival.load:g} {w.load_unit}", planned),
            self._spill)
        try:
            async with self._client(pool) as client, \
                    MetricsScraper(self.metrics_url) as scraper:
                lag = LoopLag()
                watcher = asyncio.create_task(lag.watch())
                # Worker processes get their shards before the clock starts.
                t0 = time.perf_counter_ns() + (SHARD_LEAD_NS if sharded else 0)
                cpu0 = time.process_time()
                try:
                    with gc_paused():
                        stopped = await self._supervise(dispatch(client, t0, shown), records,
                                                        stop_check, t0)
                finally:
                    watcher.cancel()
                wall = max(1, time.perf_counter_ns() - t0)
                cpu = (time.process_time() - cpu0) / (wall / 1e9) if wall else None
        finally:
            shown.finished()
        open_loop = not isinstance(arrival, ConcurrencyArrivals)
        send_lags = [(r.sent_ns - r.scheduled_ns) / 1e6 for r in records if r.sent_ns
                     ] if open_loop else None
        loop_lag, busiest, cores = lag.p99(), cpu, len(os.sched_getaffinity(0))
        if sharded is not None and wall and sharded.last:
            # Each worker is one thread on one core: the busiest one, and the latest loop.
            busiest = max(st.cpu_s for st in sharded.last) / (wall / 1e9)
            cores = 1
            cpu = (cpu or 0.0) + sum(st.cpu_s for st in sharded.last) / (wall / 1e9)
            loop_lag = max((st.loop_lag_p99_ms for st in sharded.last
                            if st.loop_lag_p99_ms is not None), default=None)
        saturated = saturation(busiest, cores, loop_lag, send_lags)
        sent = sorted(records, key=lambda r: r.sent_ns)  # records join the run when sent
        own_share = await asyncio.to_thread(own_prefix_share, [
            prompts[r.index] if r.index in prompts else self.factory.make(r.index, epoch).prompt
            for r in sent])
        if saturated:
            log.warning("at load %g the %s; its figures measure the client as much as the "
                        "engine", arrival.load, saturated)
        return RunOutcome(arrival.load, records, planned, wall, stopped, scraper.summary(),
                          open_loop=open_loop, client_cpu=cpu, loop_lag_p99_ms=loop_lag,
                          client_saturated=saturated, own_prefix_share=own_share)

    async def _supervise(self, dispatch: Awaitable[None], records: list[RequestRecord],
                         stop_check: StopCheck | None, t0: int) -> str | None:
        """Run the dispatcher; stop it when ``stop_check`` gives a reason."""
        task = asyncio.ensure_future(dispatch)
        reason: str | None = None
        try:
            while not task.done():
                await asyncio.wait([task], timeout=0.25)
                if stop_check is not None and not task.done():
                    reason = stop_check.check(records, time.perf_counter_ns() - t0)
                    if reason:
                        task.cancel()
                        break
            with contextlib.suppress(asyncio.CancelledError):
                await task
        except asyncio.CancelledError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
        if reason:
            for rec in records:
                if rec.error == "cancelled":
                    rec.error = f"cancelled: stopped early ({reason})"
        return reason

    @staticmethod
    def _start(client: StreamClient, req: PlannedRequest, rec: RequestRecord, t0: int,
               shown: RunProgress) -> Coroutine[Any, Any, None]:
        async def go() -> None:
            shown.request_sent(rec)
            try:
                await client.send(req, rec, t0)
            finally:
                shown.request_done(rec)
        return go()

    def _open_loop(self, w: Workload, reqs: list[PlannedRequest], offsets: list[int],
                   records: list[RequestRecord], epoch: int
                   ) -> Dispatch:
        async def dispatch(client: StreamClient, t0: int, shown: RunProgress) -> None:
            tasks: set[asyncio.Task[None]] = set()
            try:
                for req, off in zip(reqs, offsets, strict=True):
                    await sleep_until(t0 + off)
                    rec = _record(req, off, warmup=is_warmup(w, req.index, off), step=epoch)
                    records.append(rec)
                    task = asyncio.create_task(self._start(client, req, rec, t0, shown))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                if tasks:
                    await asyncio.wait(tasks)
            finally:
                await _cancel_all(tasks)
        return dispatch

    def _sharded(self, pool: WorkerPool, w: Workload, reqs: list[PlannedRequest],
                 offsets: list[int], records: list[RequestRecord], epoch: int) -> Dispatch:
        planned = [_record(req, off, warmup=is_warmup(w, req.index, off), step=epoch)
                   for req, off in zip(reqs, offsets, strict=True)]
        spec = self._client_spec(len(reqs))

        async def dispatch(client: StreamClient, t0: int, shown: RunProgress) -> None:
            try:
                await pool.run(spec, reqs, planned, records, t0, shown.request_sent,
                               shown.request_done)
            finally:
                records.sort(key=lambda r: r.index)
        return dispatch

    async def _closed_loop(self, w: Workload, concurrency: int, records: list[RequestRecord],
                           epoch: int, duration_s: float | None
                           ) -> Dispatch:
        limit = None if duration_s is not None or w.stop.requests is None else (
            w.stop.requests + w.warmup.requests)
        duration = duration_s if duration_s is not None else w.stop.duration_s
        end_ns = None if duration is None else int((duration + w.warmup.duration_s) * NS)
        counter = iter(range(limit if limit is not None else 1 << 62))
        prebuilt = min(limit or 2 * concurrency, 4 * concurrency + 64)
        await asyncio.to_thread(lambda: [self.factory.make(i, epoch) for i in range(prebuilt)])

        async def worker(client: StreamClient, t0: int, shown: RunProgress) -> None:
            for index in counter:
                now = time.perf_counter_ns() - t0
                if end_ns is not None and now >= end_ns:
                    return
                req = await asyncio.to_thread(self.factory.make, index, epoch)
                now = time.perf_counter_ns() - t0
                rec = _record(req, now, warmup=is_warmup(w, index, now), step=epoch)
                records.append(rec)
                await self._start(client, req, rec, t0, shown)

        async def dispatch(client: StreamClient, t0: int, shown: RunProgress) -> None:
            workers = [asyncio.create_task(worker(client, t0, shown))
                       for _ in range(concurrency)]
            try:
                await asyncio.gather(*workers)
            finally:
                await _cancel_all(set(workers))
        return dispatch


def _record(req: PlannedRequest, scheduled_ns: int, *, warmup: bool, step: int) -> RequestRecord:
    return RequestRecord(index=req.index, class_name=req.class_name,
                         prefix_group=req.prefix_group, input_tokens=req.input_tokens,
                         planned_output_tokens=req.output_tokens, scheduled_ns=scheduled_ns,
                         sent_ns=scheduled_ns, warmup=warmup, step=step)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection during a run: a full collection of the tuner's heap stalls
    the event loop for a hundred milliseconds and more, and every send and token timestamp
    with it (a step at 64 req/s had its sends 172 ms late at p99). Reference counting still
    frees nearly everything; the collection runs once the run is over, over what the run made
    only: what was alive before it (the imports, a tokenizer's torch: 475,000 objects, 0.16 s
    of CPU a collection on a 2-core EPYC) is frozen for the run (``gc.freeze``) and thawed
    after, so that garbage it turns into is collected later as usual."""
    enabled = gc.isenabled()
    if enabled:
        gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect()
            gc.unfreeze()


async def _cancel_all(tasks: set[asyncio.Task[None]]) -> None:
    pending = [t for t in tasks if not t.done()]
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
