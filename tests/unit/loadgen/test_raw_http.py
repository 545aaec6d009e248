"""The streaming client's transports against scripted servers on real sockets (127.0.0.1): the
raw one (the default) in every test, httpx's own and aiohttp's where they must behave alike."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from tuner.loadgen.client import ServerCaps, StreamClient
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import DIRECT, TRANSPORTS, Route
from tuner.workload import PlannedRequest

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
REQ = PlannedRequest(0, "c", None, 10, 2, "hello")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(done: int) -> bytes:
    return (b'data: {"choices":[{"text":"a"}],"usage":{"prompt_tokens":10,'
            b'"completion_tokens":%d}}\n\n' % done)


async def read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    await reader.readexactly(length)


@asynccontextmanager
async def serving(script: Script) -> AsyncIterator[tuple[str, list[int]]]:
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await script(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", connections
    finally:
        server.close()


async def send(url: str, n: int = 1, route: Route = DIRECT) -> list[RequestRecord]:
    records = []
    async with StreamClient(url, model="m", api="completions", caps=ServerCaps(),
                            pool_size=4, timeout_s=5, route=route) as client:
        for i in range(n):
            rec = RequestRecord(index=i, class_name="c", prefix_group=None, input_tokens=10,
                                planned_output_tokens=2, scheduled_ns=0)
            await client.send(REQ, rec, 0)
            records.append(rec)
    return records


async def streams(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        # the second event cut across two writes, [DONE] and the end in one
        whole = event(2)
        writer.write(chunk(event(1)) + chunk(whole[:20]))
        await writer.drain()
        await asyncio.sleep(0.01)
        writer.write(chunk(whole[20:]) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()


EVERY = pytest.mark.parametrize("route", [Route(t) for t in TRANSPORTS], ids=TRANSPORTS)


@EVERY
async def test_streams_are_read_and_connections_kept_alive(route: Route) -> None:
    async with serving(streams) as (url, connections):
        recs = await send(url, n=3, route=route)
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert [r.output_tokens for r in recs] == [2, 2, 2]
    assert [sum(r.chunk_tokens) for r in recs] == [2, 2, 2]
    assert recs[0].prompt_tokens == 10
    assert recs[0].mismatch is None
    assert len(connections) == 1  # one connection for three requests


@EVERY
async def test_a_refused_request_is_a_record_with_the_servers_words(route: Route) -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 10\r\n\r\n"
                     b"overloaded")
        await writer.drain()

    async with serving(refuse) as (url, _):
        [rec] = await send(url, route=route)
    assert rec.status == 503
    assert rec.error == "HTTP 503: overloaded"


@EVERY
async def test_a_server_that_drops_the_stream_midway_is_an_error(route: Route) -> None:
    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     + chunk(event(1)))
        await writer.drain()
        writer.transport.abort()

    async with serving(drop) as (url, _):
        [rec] = await send(url, route=route)
    assert not rec.ok
    assert rec.error
    if route == DIRECT:
        assert rec.error == "ConnectionError: the server closed the connection"
    assert list(rec.chunk_tokens) == [1]


@EVERY
async def test_nobody_listening_is_a_record(route: Route) -> None:
    async with serving(streams) as (url, _):
        pass  # closed again: the port refuses
    [rec] = await send(url, route=route)
    assert rec.error is not None
    assert "Connect" in rec.error or "refused" in rec.error.lower()


async def test_a_kept_alive_connection_closed_before_the_request_is_read_is_retried_once(
        ) -> None:
    """llama-server says keep-alive, then closes the connection after every streamed
    response: a request written onto it before the close arrives goes again, on a new one."""
    async def one_per_connection(reader: asyncio.StreamReader,
                                 writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     + chunk(event(2)) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        await read_request(reader)  # the next request arrives: closed, unanswered

    async with serving(one_per_connection) as (url, connections):
        recs = await send(url, n=3)
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert len(connections) == 3  # 2 and 3 each found the last one dead and opened one


async def test_a_kept_alive_connection_that_drops_midway_through_an_answer_is_an_error(
        ) -> None:
    """Once any of the answer has come, the request is not sent again."""
    async def then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     + chunk(event(2)) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                     + chunk(event(1)))
        await writer.drain()
        writer.transport.abort()

    async with serving(then_drop) as (url, connections):
        first, second = await send(url, n=2)
    assert first.ok
    assert not second.ok
    assert "ConnectionError" in (second.error or "")
    assert len(connections) == 1


@EVERY
async def test_a_finished_request_leaves_no_garbage_cycle(route: Route) -> None:
    """A run pauses the cyclic collector (gc_paused), so whatever a request leaves in a
    reference cycle stays until the run ends: nothing of a finished request may."""
    async with serving(streams) as (url, _):
        await send(url, n=1, route=route)  # the first: connections and imports settle
        gc.collect()
        gc.disable()
        try:
            recs = await send(url, n=5, route=route)
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = [o for o in gc.garbage if isinstance(o, httpx.Response | httpx.Request)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert left == []
