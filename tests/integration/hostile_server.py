"""TEST ONLY: a hostile OpenAI-style endpoint for `tune bench`, a real process (aiohttp).

It lists the model and answers the probe's requests (``max_tokens`` 4) as a server should; every
other completion gets, in turn: malformed events, an endless stream, one event that never ends
(huge chunks), a 200 with an HTML page (a wrong content type), a stream closed mid-way, headers
and then silence, an error whose body never ends. It writes a line per answer to stdout, with
how much it sent before the client hung up.

    python -m tests.integration.hostile_server PORT
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable

from aiohttp import web

MODEL = "tiny-llama"
PROBE_TOKENS = 4
MIB = 2**20


def event(done: int, text: str = " a") -> bytes:
    return b"data: " + json.dumps({"id": "x", "object": "text_completion", "model": MODEL,
                                   "choices": [{"index": 0, "text": text}],
                                   "usage": {"prompt_tokens": 8, "completion_tokens": done,
                                             "total_tokens": 8 + done}}).encode() + b"\n\n"


async def stream(request: web.Request, status: int = 200,
                 content_type: str = "text/event-stream") -> web.StreamResponse:
    resp = web.StreamResponse(status=status, headers={"content-type": content_type})
    await resp.prepare(request)
    return resp


async def honest(request: web.Request, n: int) -> web.StreamResponse:
    resp = await stream(request)
    for i in range(1, n + 1):
        await resp.write(event(i))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def malformed(request: web.Request) -> web.StreamResponse:
    resp = await stream(request)
    await resp.write(b'data: {"choices": [{"text": " a"\n\n')
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def endless(request: web.Request) -> web.StreamResponse:
    resp = await stream(request)
    done = 0
    while True:  # until the client hangs up
        done += 1
        await resp.write(event(done))
        await asyncio.sleep(0.001)


async def huge(request: web.Request) -> web.StreamResponse:
    resp = await stream(request)
    await resp.write(b'data: {"choices": [{"text": "')
    chunk = b"a" * (64 * 1024)
    for _ in range(4096):  # 256 MiB of one event, unless the client hangs up
        await resp.write(chunk)
    return resp


async def html(request: web.Request) -> web.StreamResponse:
    page = b"<!doctype html>\n<html><body>\n\n<h1>Welcome to nginx!</h1>\n</body></html>\n"
    resp = await stream(request, content_type="text/html")
    await resp.write(page)
    await resp.write_eof()
    return resp


async def cut(request: web.Request) -> web.StreamResponse:
    resp = await stream(request)
    await resp.write(event(1) + event(2))
    await asyncio.sleep(0.05)
    assert request.transport is not None
    request.transport.abort()  # closed mid-stream, no [DONE], no chunked end
    return resp


async def silent(request: web.Request) -> web.StreamResponse:
    resp = await stream(request)
    await asyncio.sleep(3600)
    return resp


async def error_without_end(request: web.Request) -> web.StreamResponse:
    resp = await stream(request, status=500, content_type="text/plain")
    while True:
        await resp.write(b"overloaded " * 6000)


HOSTILE: list[tuple[str, Callable[[web.Request], Awaitable[web.StreamResponse]]]] = [
    ("malformed", malformed), ("endless", endless), ("huge", huge), ("html", html),
    ("cut", cut), ("silent", silent), ("error_without_end", error_without_end)]


class Endpoint:
    def __init__(self) -> None:
        self.served = 0

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": MODEL, "object": "model"}]})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = int(body.get("max_tokens") or 16)
        if n == PROBE_TOKENS:
            return await honest(request, n)
        name, answer = HOSTILE[self.served % len(HOSTILE)]
        self.served += 1
        try:
            return await answer(request)
        except (ConnectionError, asyncio.CancelledError):
            print(f"{name}: the client hung up", flush=True)
            raise
        finally:
            print(f"{name}: answered", flush=True)


async def main(port: int) -> None:
    endpoint = Endpoint()
    app = web.Application()
    app.add_routes([web.get("/v1/models", endpoint.models),
                    web.post("/v1/completions", endpoint.completions)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"hostile endpoint on {port}", flush=True)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
