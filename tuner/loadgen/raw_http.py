"""Streaming HTTP/1.1 POSTs on asyncio protocols and httptools' parser: no task wake-up per read.

The streaming client's hot path. httpx (on any transport) hands each network read up through
a chain of async iterators, one coroutine resumption per read; here a read is one
``data_received`` callback, parsed by llhttp (httptools, the parser of uvicorn) and handed to
the caller's ``on_data`` with the body bytes it completed (chunked transfer decoded). The
request's coroutine wakes once, when the response has ended. Connections are kept alive and
reused; a connection that failed, was cancelled or was told to close is dropped.
(experiments/benchmarks/client_cost.py measures it against httpx on aiohttp's transport.)
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

import httptools

OnData = Callable[[int, bytes], bool]
"""Called with the status and the body bytes of one network read; True: the caller has what
it wanted (the response's end, or an error), and the connection is closed unless the
response ends within ``END_GRACE_S`` (then it is kept for the next request); an error
response's connection is closed at once."""
END_GRACE_S = 1.0


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.status = 0
        self.answered = False
        """Some of the response to the request under way has arrived."""
        self.keep_alive = False
        self.on_data: OnData | None = None
        self.done: asyncio.Future[None] | None = None
        self._body = bytearray()
        self._grace: asyncio.TimerHandle | None = None

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.answered = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._finish(ConnectionError(f"bad HTTP response: {exc}"))
            return
        if self._flush() and self._grace is None \
                and self.done is not None and not self.done.done():
            self.on_data = None
            if self.status != 200:  # an error's start is all the caller reads: hang up
                self._finish(None, close=True)
                return
            self._grace = asyncio.get_running_loop().call_later(
                END_GRACE_S, lambda: self._finish(None, close=True))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._grace is not None:  # the caller had what it wanted: a close loses nothing
            self._finish(None, close=True)
            return
        self._finish(ConnectionError("the server closed the connection"
                                     + (f" ({exc})" if exc else "")))

    # httptools callbacks
    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        self._flush()
        self._finish(None)

    def _flush(self) -> bool:
        """Hand the body bytes parsed so far to ``on_data``; what it answered (False: none).
        Bytes that come after the caller had what it wanted are dropped, not kept: a server
        may go on sending."""
        if not self._body:
            return False
        if self.on_data is None:
            self._body.clear()
            return False
        body = bytes(self._body)
        self._body.clear()
        return self.on_data(self.status, body)

    def start(self, on_data: OnData) -> asyncio.Future[None]:
        self.status, self.answered, self.keep_alive, self.on_data = 0, False, False, on_data
        self._body.clear()
        self.done = asyncio.get_running_loop().create_future()
        return self.done

    def _finish(self, error: Exception | None, *, close: bool = False) -> None:
        self.on_data = None
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        if close or error is not None:
            self.keep_alive = False
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()
        if self.done is not None and not self.done.done():
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)


class RawHttpPool:
    """Keep-alive connections to one server; ``post`` streams one response."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None,
                 connect_timeout_s: float = 10.0) -> None:
        url = urlsplit(base_url)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if url.scheme == "https" else None
        self.prefix = url.path.rstrip("/")
        self.connect_timeout_s = connect_timeout_s
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._head = (f"Host: {url.netloc}\r\nContent-Type: application/json\r\n"
                      f"Accept: text/event-stream\r\n{extra}")
        self._idle: list[_Connection] = []

    async def _connection(self) -> tuple[_Connection, bool]:
        """A connection for one request, and whether it was kept alive from an earlier one."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and conn.transport is not None \
                    and not conn.transport.is_closing():
                return conn, True
        return await self._connect(), False

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout_s):
            _, conn = await loop.create_connection(_Connection, self.host, self.port,
                                                   ssl=self.ssl)
        return conn

    async def post(self, path: str, body: bytes, on_data: OnData) -> int:
        """POST ``body``; ``on_data`` gets each read's body bytes. Returns the status; raises
        ConnectionError (and TimeoutError while connecting) when the exchange fails.

        A kept-alive connection that the server closes before any of the answer arrives is
        one it had closed before it read the request: the request goes once more, on a new
        connection. (llama-server closes the connection after every streamed response while
        its headers say keep-alive: tools/server/server-http.cpp's content provider returns
        false at the stream's end, which cpp-httplib takes as a failed write. A client that
        writes its next request before the close arrives would otherwise fail it.)"""
        conn, reused = await self._connection()
        try:
            return await self._exchange(conn, path, body, on_data)
        except ConnectionError:
            if not reused or conn.answered:
                raise
        return await self._exchange(await self._connect(), path, body, on_data)

    async def _exchange(self, conn: _Connection, path: str, body: bytes, on_data: OnData
                        ) -> int:
        done = conn.start(on_data)
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\n{self._head}"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        assert conn.transport is not None
        conn.transport.write(head + body)
        try:
            await done
        except BaseException:
            if conn.transport is not None:
                conn.transport.close()
            raise
        if conn.keep_alive and not conn.closed:
            self._idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()
        return conn.status

    def close(self) -> None:
        for conn in self._idle:
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
