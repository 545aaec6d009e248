"""An httpx transport for streamed HTTP/1.1 answers on asyncio protocols and httptools' parser.

The streaming client's fast transport (``--transport raw``, the default). httpx's own transport
and aiohttp's hand each network read up through a chain of async iterators, one coroutine
resumption per read; here a read is one ``data_received`` callback, parsed by llhttp
(httptools, the parser of uvicorn). A response's body can be read as httpx reads any other
(``aiter_raw``), or pushed: the response's ``PUSH`` extension takes a callback that gets each
read's body bytes (chunked transfer decoded) with the time it arrived, and the reader's
coroutine wakes once, when the callback has what it wanted or the answer ended.

Connections are kept alive and reused, at most ``limits.max_connections`` at once (a request
waits for one, bounded by the pool timeout). A connection that failed, was cancelled or was told
to close is dropped; one whose reader stopped before the answer's end is kept only if the end
arrives within ``END_GRACE_S``. Honoured timeouts: connect and pool, and read while a body is
iterated (a pushed body is bounded by the caller's own timeout: a timer re-armed on every read
costs 5% of the client's CPU per token). No proxy: the transport talks to the server itself.
Failures are httpx's exceptions, each caused by what the socket or the parser said.
(experiments/benchmarks/client_cost.py measures the transports against each other.)
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import cast

import httptools
import httpx

OnRead = Callable[[bytes, int], bool]
"""Called with the body bytes of one network read and when it arrived (``perf_counter_ns``);
True: the caller has what it wanted (the answer's end, or an error) and reads no further."""
Push = Callable[[OnRead], Awaitable[None]]
PUSH = "tuner.push"
"""The response extension that pushes the body to an ``OnRead``; returns when the callback had
what it wanted or the answer ended (raises httpx.ReadError when the connection failed first)."""
END_GRACE_S = 1.0


class _Connection(asyncio.Protocol):
    """One keep-alive connection and the exchange under way on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.reset()

    def reset(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.answered = False
        """Some of the answer to the request under way has arrived."""
        self.complete = False
        self.keep_alive = False
        self.taken = False
        """The reader had what it wanted: later body bytes are dropped."""
        self.failure: httpx.TransportError | None = None
        self.on_read: OnRead | None = None
        self.pending: deque[tuple[bytes, int]] = deque()
        self.head: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.wakeup: asyncio.Future[None] | None = None
        self.on_end: Callable[[], None] | None = None
        """Called when the answer ends after its reader let go of it."""
        self._body = bytearray()
        self._now = 0

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.answered = True
        self._now = time.perf_counter_ns()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.fail(httpx.RemoteProtocolError(f"bad HTTP response: {exc}"),
                      ConnectionError(f"bad HTTP response: {exc}"))
            return
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.complete:
            said = "the server closed the connection" + (f" ({exc})" if exc else "")
            self.fail(httpx.ReadError(said), ConnectionError(said))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if not self.head.done():
            self.head.set_result(None)

    def on_body(self, body: bytes) -> None:
        self._body += body

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        self._flush()
        self.complete = True
        self._wake()
        if self.on_end is not None:
            self.on_end()

    def _flush(self) -> None:
        """Hand the body bytes parsed so far to the reader: its callback, or the queue an
        iterating reader takes from."""
        if not self._body:
            return
        chunk = bytes(self._body)
        self._body.clear()
        if self.taken:
            return
        if self.on_read is None:
            self.pending.append((chunk, self._now))
            self._wake()
        elif self.on_read(chunk, self._now):
            self.taken = True
            self._wake()

    def _wake(self) -> None:
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

    def fail(self, error: httpx.TransportError, cause: Exception) -> None:
        """The exchange failed: the reader is told (``error``, caused by ``cause``), the
        connection is dropped."""
        if self.failure is None and not self.taken:
            error.__cause__ = cause
            self.failure = error
        self.keep_alive = False
        if not self.head.done():
            self.head.set_exception(self.failure or error)
            self.head.exception()  # retrieved here: a waiter may have gone
        self._wake()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    async def wait(self) -> None:
        """Until something arrives for the reader (or the exchange ends)."""
        self.wakeup = asyncio.get_running_loop().create_future()
        try:
            await self.wakeup
        finally:
            self.wakeup = None


class _Body(httpx.AsyncByteStream):
    """A response's body, read from its connection; closing it gives the connection back."""

    def __init__(self, conn: _Connection, release: Callable[[_Connection], None],
                 read_timeout_s: float | None) -> None:
        self.conn = conn
        self._release = release
        self._read_timeout_s = read_timeout_s
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self.conn
        while True:
            while conn.pending:
                chunk, _ = conn.pending.popleft()
                yield chunk
            if conn.failure is not None:
                raise conn.failure
            if conn.complete:
                return
            try:
                async with asyncio.timeout(self._read_timeout_s):
                    await conn.wait()
            except TimeoutError:
                conn.fail(httpx.ReadTimeout("no read within the read timeout"),
                          TimeoutError(f"{self._read_timeout_s} s"))

    async def push(self, on_read: OnRead) -> None:
        conn = self.conn
        for chunk, at in conn.pending:
            if on_read(chunk, at):
                conn.taken = True
                break
        conn.pending.clear()
        conn.on_read = on_read
        while not (conn.taken or conn.complete or conn.failure is not None):
            await conn.wait()
        conn.on_read = None
        if conn.failure is not None and not conn.taken:
            raise conn.failure

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self.conn.taken = True  # what comes now is nobody's
            self._release(self.conn)


class RawTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 connections on asyncio protocols; see the module's text."""

    def __init__(self, limits: httpx.Limits | None = None, *,
                 verify: ssl.SSLContext | None = None) -> None:
        self._max = (limits or httpx.Limits()).max_connections
        self._slots = asyncio.Semaphore(self._max) if self._max else None
        self._verify = verify
        self._idle: dict[tuple[bytes, bytes, int], list[_Connection]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = cast(dict[str, float | None], request.extensions.get("timeout", {}))
        if self._slots is not None:
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await self._slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout(f"no free connection of {self._max}") from None
        try:
            return await self._send(request, timeouts)
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            raise

    async def _send(self, request: httpx.Request, timeouts: dict[str, float | None]
                    ) -> httpx.Response:
        """Send on a kept-alive connection, or a new one. A kept-alive connection that the
        server closes before any of the answer arrives is one it had closed before it read the
        request: the request goes once more, on a new connection. (llama-server closes the
        connection after every streamed response while its headers say keep-alive:
        tools/server/server-http.cpp's content provider returns false at the stream's end,
        which cpp-httplib takes as a failed write. A client that writes its next request
        before the close arrives would otherwise fail it.)"""
        origin = (request.url.raw_scheme, request.url.raw_host,
                  request.url.port or (443 if request.url.scheme == "https" else 80))
        head = self._head(request)
        body = await request.aread()
        conn, reused = self._kept(origin), True
        if conn is None:
            conn, reused = await self._connect(origin, timeouts.get("connect")), False
        try:
            return await self._exchange(conn, head + body, origin, timeouts)
        except httpx.TransportError:
            if not reused or conn.answered:
                raise
        conn = await self._connect(origin, timeouts.get("connect"))
        return await self._exchange(conn, head + body, origin, timeouts)

    @staticmethod
    def _head(request: httpx.Request) -> bytes:
        target = request.url.raw_path
        lines = [b"%s %s HTTP/1.1" % (request.method.encode(), target)]
        lines += [b"%s: %s" % (k, v) for k, v in request.headers.raw]
        return b"\r\n".join(lines) + b"\r\n\r\n"

    def _kept(self, origin: tuple[bytes, bytes, int]) -> _Connection | None:
        idle = self._idle.get(origin, [])
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None \
                    and not conn.transport.is_closing():
                return conn
        return None

    async def _connect(self, origin: tuple[bytes, bytes, int], timeout_s: float | None
                       ) -> _Connection:
        scheme, host, port = origin
        tls = None
        if scheme == b"https":
            tls = self._verify or ssl.create_default_context()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await loop.create_connection(_Connection, host.decode(), port,
                                                       ssl=tls)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"no connection within {timeout_s} s") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        return conn

    async def _exchange(self, conn: _Connection, message: bytes,
                        origin: tuple[bytes, bytes, int], timeouts: dict[str, float | None]
                        ) -> httpx.Response:
        conn.reset()
        assert conn.transport is not None
        conn.transport.write(message)
        try:
            async with asyncio.timeout(timeouts.get("read")):
                await conn.head
        except TimeoutError:
            conn.fail(httpx.ReadTimeout("no answer within the read timeout"),
                      TimeoutError(f"{timeouts.get('read')} s"))
            raise conn.failure or httpx.ReadTimeout("no answer") from None
        except BaseException:
            if conn.transport is not None:
                conn.transport.close()
            raise
        body = _Body(conn, lambda c: self._release(c, origin), timeouts.get("read"))
        return httpx.Response(conn.status, headers=conn.headers, stream=body,
                              extensions={"http_version": b"HTTP/1.1", PUSH: body.push})

    def _release(self, conn: _Connection, origin: tuple[bytes, bytes, int]) -> None:
        """The reader is done with ``conn``: keep it for the next request if its answer
        ended (or ends within ``END_GRACE_S``), else close it; free its slot."""
        if self._slots is not None:
            self._slots.release()
        if conn.complete:
            self._keep(conn, origin)
            return
        if conn.status != 200 or conn.failure is not None:  # an error's start was enough
            conn.fail(httpx.ReadError("closed by the reader"), ConnectionError("closed"))
            return
        timer = asyncio.get_running_loop().call_later(
            END_GRACE_S, conn.fail, httpx.ReadError("no end"), ConnectionError("no end"))

        def ended() -> None:
            timer.cancel()
            self._keep(conn, origin)

        conn.on_end = ended

    def _keep(self, conn: _Connection, origin: tuple[bytes, bytes, int]) -> None:
        if conn.keep_alive and not conn.closed and conn.failure is None:
            self._idle.setdefault(origin, []).append(conn)
        elif conn.transport is not None and not conn.transport.is_closing():
            conn.transport.close()

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                if conn.transport is not None:
                    conn.transport.close()
        self._idle.clear()
