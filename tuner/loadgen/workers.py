"""Several client processes for one open-loop run: sharded sends on one clock, merged records.

One process streams about 1 / (CPU ms per token) thousand tokens per second per core
(experiments/benchmarks/client_cost.py); a GPU engine streams more. The run's planned requests
are dealt round-robin to worker processes; each sends its share at the planned times on the
same clock (``time.perf_counter_ns`` is CLOCK_MONOTONIC on Linux: one clock for every process
of the machine), streams, and reports back as it goes: a line when a request is sent, its
record when it ends, so the parent's early-stop checks and progress see the run live. The
parent keeps one record per planned request, in plan order, exactly as a single process would.

Workers are spawned once per runner (start-up is paid once, not per step), inherit the
parent's CPU affinity (the load generator's cores), and end when the parent closes them or
dies (their pipe closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from multiprocessing.connection import Connection
from typing import Any

from tuner.loadgen.client import Api, ServerCaps, StreamClient
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import DIRECT, Route
from tuner.loadgen.saturation import LoopLag
from tuner.loadgen.schedule import sleep_until
from tuner.workload import PlannedRequest

TOKENS_PER_CORE = 15_000
"""Output tokens per second one worker is given by default: about half of what one process
streams at full CPU (31k on the 2-core benchmark machine, client_cost.txt), so each keeps
room for bursts."""
START_TIMEOUT_S = 60.0
FLUSH_S = 0.05
"""How often a worker reports what happened (sends and finished records)."""


def workers_for(tokens_per_s: float, cores: int) -> int:
    """How many client processes a planned output-token rate needs, at most one per core."""
    return max(1, min(cores, math.ceil(tokens_per_s / TOKENS_PER_CORE)))


@dataclass(frozen=True)
class ClientSpec:
    """What a worker needs to build its streaming client."""

    url: str
    model: str
    api: Api
    caps: ServerCaps
    pool_size: int
    timeout_s: float
    temperature: float
    route: Route = DIRECT

    def client(self) -> StreamClient:
        return StreamClient(self.url, model=self.model, api=self.api, caps=self.caps,
                            pool_size=self.pool_size, timeout_s=self.timeout_s,
                            temperature=self.temperature, route=self.route)


@dataclass(frozen=True)
class Shard:
    """One worker's part of a run: its requests, their planned offsets and records."""

    client: ClientSpec
    requests: list[PlannedRequest]
    records: list[RequestRecord]
    t0_ns: int


@dataclass(frozen=True)
class WorkerStats:
    cpu_s: float
    loop_lag_p99_ms: float | None


# ----------------------------------------------------------------------------- worker side

def worker_main(conn: Connection) -> None:  # pragma: no cover - runs in the worker process
    """Run shards until told to stop (None) or the parent goes away."""
    from tuner.loadgen import event_loop

    conn.send(("ready",))  # imports done: the parent may start the clock
    while True:
        try:
            shard = conn.recv()
        except (EOFError, OSError):
            return
        if shard is None:
            return
        if not isinstance(shard, Shard):  # a stop that came after its run had ended
            continue
        event_loop.run(_run_shard(conn, shard))


async def _run_shard(conn: Connection, shard: Shard) -> None:  # pragma: no cover - in worker
    loop = asyncio.get_running_loop()
    outbox: list[tuple[Any, ...]] = []
    stop = asyncio.Event()
    loop.add_reader(conn.fileno(), lambda: stop.set() if conn.poll() and conn.recv() else None)
    lag = LoopLag()
    watcher = asyncio.create_task(lag.watch())
    cpu0 = time.process_time()

    async def flush_every() -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            if outbox:
                conn.send(("events", outbox[:]))
                outbox.clear()

    async def one(client: StreamClient, req: PlannedRequest, rec: RequestRecord) -> None:
        try:
            await client.send(req, rec, shard.t0_ns)
        finally:
            outbox.append(("done", rec))

    tasks: set[asyncio.Task[None]] = set()
    flusher = asyncio.create_task(flush_every())
    stopper = asyncio.create_task(stop.wait())
    try:
        async with shard.client.client() as client:
            for req, rec in zip(shard.requests, shard.records, strict=True):
                waiter = asyncio.create_task(sleep_until(shard.t0_ns + rec.scheduled_ns))
                await asyncio.wait([waiter, stopper], return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set():
                    waiter.cancel()
                    break
                task = asyncio.create_task(one(client, req, rec))
                rec.sent_ns = time.perf_counter_ns() - shard.t0_ns
                outbox.append(("sent", rec.index, rec.sent_ns))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks and not stop.is_set():
                await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
                while tasks and not stop.is_set():
                    await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
            for t in list(tasks):
                t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        loop.remove_reader(conn.fileno())
        flusher.cancel()
        stopper.cancel()
        watcher.cancel()
        conn.send(("events", outbox[:]))
        conn.send(("finished", WorkerStats(time.process_time() - cpu0, lag.p99())))


# ----------------------------------------------------------------------------- parent side

class WorkerPool:
    """``n`` spawned client processes, reused run after run."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child,), daemon=True,
                               name="tuner-loadgen")
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        self.last: list[WorkerStats] = []
        for conn, proc in zip(self._conns, self._procs, strict=True):
            if not conn.poll(START_TIMEOUT_S) or conn.recv() != ("ready",):
                self.close()
                raise RuntimeError(f"a load-generator process did not start in "
                                   f"{START_TIMEOUT_S:.0f}s (exit code {proc.exitcode})")

    @property
    def size(self) -> int:
        return len(self._conns)

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError, BrokenPipeError):
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []

    async def run(self, client: ClientSpec, requests: list[PlannedRequest],
                  planned: list[RequestRecord], records: list[RequestRecord], t0_ns: int,
                  on_sent: Callable[[RequestRecord], None],
                  on_done: Callable[[RequestRecord], None]) -> None:
        """Send ``requests`` (``planned`` holds their records, offsets in ``scheduled_ns``)
        across the workers; a record joins ``records`` when its request is sent and is
        completed in place when it ends. Cancelling this stops every worker's sends."""
        loop = asyncio.get_running_loop()
        by_index = {rec.index: rec for rec in planned}
        finished: list[asyncio.Future[WorkerStats]] = [loop.create_future()
                                                       for _ in self._conns]

        def handle(i: int, msg: tuple[Any, ...]) -> None:
            kind = msg[0]
            if kind == "events":
                for event in msg[1]:
                    if event[0] == "sent":
                        rec = by_index[event[1]]
                        rec.sent_ns = event[2]
                        records.append(rec)
                        on_sent(rec)
                    else:
                        done = event[1]
                        rec = by_index[done.index]
                        for f in fields(RequestRecord):
                            setattr(rec, f.name, getattr(done, f.name))
                        rec.seal()  # a run of ones shares one object again after the pipe
                        on_done(rec)
            elif kind == "finished" and not finished[i].done():
                finished[i].set_result(msg[1])

        def gone(i: int) -> None:  # a worker died: its run is over, with nothing to report
            if not finished[i].done():
                finished[i].set_result(WorkerStats(0.0, None))

        def listen(i: int, conn: Connection) -> None:
            while True:
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    loop.call_soon_threadsafe(gone, i)
                    return
                loop.call_soon_threadsafe(handle, i, msg)
                if msg[0] == "finished":
                    return

        n = self.size
        for i, conn in enumerate(self._conns):
            conn.send(Shard(client, requests[i::n], planned[i::n], t0_ns))
            threading.Thread(target=listen, args=(i, conn), daemon=True,
                             name=f"tuner-loadgen-{i}").start()
        try:
            self.last = list(await asyncio.gather(*finished))
        except asyncio.CancelledError:
            for conn in self._conns:
                with contextlib.suppress(OSError, BrokenPipeError):
                    conn.send("stop")
            self.last = list(await asyncio.shield(asyncio.gather(*finished)))
            raise

