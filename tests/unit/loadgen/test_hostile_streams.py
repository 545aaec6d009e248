"""A hostile or broken server's response is a record with its error, and it cannot make a request
hold more than a bounded amount of memory: a huge event, an endless stream, a body that holds no
event (a wrong content type), malformed events, an error without end. The responses are fed to
the client's reader as network reads would bring them; a real hostile server against a real
`tune bench` is tests/integration/test_hostile_endpoint.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tuner.loadgen.client import MAX_EVENT_BYTES, Reading, ServerCaps, StreamClient
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import TRANSPORTS, Route, Transport
from tuner.workload import PlannedRequest

REQ = PlannedRequest(0, "c", None, 8, 8, "hello")


def record() -> RequestRecord:
    return RequestRecord(index=0, class_name="c", prefix_group=None, input_tokens=8,
                         planned_output_tokens=8, scheduled_ns=0)


def event(done: int) -> bytes:
    return b"data: " + json.dumps({"choices": [{"text": " a"}], "usage": {
        "prompt_tokens": 8, "completion_tokens": done}}).encode() + b"\n\n"


def feed(reading: Reading, reads: Iterator[bytes], limit: int = 10**6) -> int:
    """Reads until the reader has what it wants; how many it took."""
    for n, chunk in enumerate(reads, 1):
        if reading.read(chunk, n) or n >= limit:
            return n
    return -1


def test_a_huge_event_ends_the_request_at_a_bound() -> None:
    rec = record()
    reading = Reading(ServerCaps(), rec)
    big = b"data: {\"choices\": [{\"text\": \"" + b"a" * 65536

    def reads() -> Iterator[bytes]:
        while True:  # one event that never ends
            yield big

    taken = feed(reading, reads())
    assert rec.error == "an event longer than 1 MiB: not OpenAI-style server-sent events"
    assert taken * len(big) <= MAX_EVENT_BYTES + 2 * len(big)  # it stopped at the bound


@pytest.mark.parametrize("caps", [ServerCaps(), ServerCaps(continuous_usage=False)])
def test_an_endless_stream_ends_the_request(caps: ServerCaps) -> None:
    rec = record()
    reading = Reading(caps, rec)
    taken = feed(reading, (event(n) for n in range(1, 10**6)))
    assert rec.error == ("the stream went on past 33 tokens, 8 asked for (max_tokens): an "
                         "endless stream")
    assert taken == 33
    assert len(rec.chunk_ns) <= 32


def test_a_body_that_is_not_server_sent_events_says_how_it_began() -> None:
    rec = record()
    reading = Reading(ServerCaps(), rec)
    assert not reading.read(b"<!doctype html>\n<html><body>\n\n<p>Welcome</p></body></html>", 1)
    reading.ended(REQ, 2)
    assert rec.error == ("no server-sent event with data: the body began '<!doctype html>\\n"
                         "<html><body>\\n\\n<p>Welcome</p></body></html>'")


def test_an_empty_body_is_an_error() -> None:
    rec = record()
    Reading(ServerCaps(), rec).ended(REQ, 1)
    assert rec.error == "an empty body: no server-sent event with data"


def test_a_malformed_event_is_the_request_s_error() -> None:
    rec = record()
    reading = Reading(ServerCaps(continuous_usage=False), rec)
    assert reading.read(b'data: {"choices": [{"text": " a"\n\n', 1)
    assert rec.error is not None
    assert rec.error.startswith("bad SSE payload: ")


def test_a_stream_cut_short_is_the_request_s_error() -> None:
    rec = record()
    reading = Reading(ServerCaps(), rec)
    assert not reading.read(event(1) + event(2), 1)
    reading.ended(REQ, 2)  # the server closed it
    assert rec.error == "stream ended without [DONE] after 2 of 8 forced output tokens"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_error_without_end_is_read_only_as_far_as_it_says_something(
        transport: Transport) -> None:
    """A server answering 500 with a body that never ends: the record has its start, and the
    request ends without waiting for the rest (real sockets, each of the client's
    transports)."""
    sent = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        chunk = b"overloaded " * 1000
        try:
            while sent < 2**30:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                sent += len(chunk)
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        client = StreamClient(f"http://127.0.0.1:{port}", model="m", api="completions",
                              caps=ServerCaps(), pool_size=1, timeout_s=30,
                              route=Route(transport))
        async with client:
            rec = record()
            await asyncio.wait_for(client.send(REQ, rec, 0), 10)
    assert rec.error is not None
    assert rec.error.startswith("HTTP 500: overloaded overloaded")
    assert sent < 2**30  # the client hung up
