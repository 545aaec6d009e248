"""A minimal OpenAI-style streaming server: raw asyncio, 127.0.0.1. Each completion streams
``max_tokens`` events ``gap_s`` apart, shaped as vLLM's (continuous usage), then [DONE];
``GET /metrics`` answers a Prometheus text (:meth:`Fake.metrics`). ``plain``: events without
usage (as llama-server, TGI, transformers serve and most gateways send them), the usage in one
last event when the request asks for it (``stream_options.include_usage``). ``clock``: it keeps
when it wrote each event (``time.perf_counter_ns``, the machine's monotonic clock, which a
client process on the same machine shares), per prompt; ``GET /writes`` answers them as JSON
(``{sha1 of the prompt: [ns, ...]}``) and forgets them.

Client tests run it on a thread of the test process (``sse_server``, a free port);
experiments/benchmarks/client_cost.py runs it as its own process, or several on one port:
``python -m tests.sse_server PORT GAP_S [plain] [clock]``."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Fake:
    """How the fake serves: ``gap_s`` between events, the model it lists, and the share of
    prompt tokens its (pretended) prefix cache hits, counted per completion served."""

    gap_s: float = 0.002
    served: str = "tiny-llama"
    hit_share: float = 0.0
    completions: int = 0
    plain: bool = False
    clock: bool = False
    writes: dict[str, list[int]] = field(default_factory=dict)

    def metrics(self) -> bytes:
        """GET /metrics: a vLLM-style exposition (a tiny KV-cache usage, an idle engine)."""
        queries = 100 * self.completions
        return (b"vllm:kv_cache_usage_perc 0.0001\nvllm:num_requests_running 0\n"
                b"vllm:num_requests_waiting 0\nvllm:prefix_cache_queries_total %d\n"
                b"vllm:prefix_cache_hits_total %d\n"
                % (queries, round(queries * self.hit_share)))


def prompt_key(body: dict[str, Any]) -> str:
    """What names a request in the write log: the sha1 of its prompt (or its messages)."""
    prompt = body.get("prompt")
    if prompt is None:
        prompt = json.dumps(body.get("messages"), sort_keys=True)
    return hashlib.sha1(str(prompt).encode()).hexdigest()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  fake: Fake) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            body = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET /writes"):
                data = json.dumps(fake.writes).encode()
                fake.writes = {}
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(data), data))
                continue
            if head.startswith(b"GET /metrics"):
                text = fake.metrics()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(text), text))
                continue
            if head.startswith(b"GET"):
                data = json.dumps({"data": [{"id": fake.served}]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(data), data))
                continue
            try:
                asked = json.loads(body)
            except ValueError:
                writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                continue
            n = asked.get("max_tokens", 16)
            fake.completions += 1
            written: list[int] | None = None
            if fake.clock:
                written = fake.writes.setdefault(prompt_key(asked), [])
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            for i in range(n):
                usage = (b"" if fake.plain else b',"usage":{"prompt_tokens":32,"total_tokens":%d,'
                         b'"completion_tokens":%d}' % (33 + i, i + 1))
                ev = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,'
                      b'"model":"tiny-llama","choices":[{"index":0,"text":" a","logprobs":null,'
                      b'"finish_reason":null}]%s}\n\n' % usage)
                writer.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                if written is not None:
                    written.append(time.perf_counter_ns())
                await writer.drain()
                await asyncio.sleep(fake.gap_s)
            if fake.plain and (asked.get("stream_options") or {}).get("include_usage"):
                ev = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,'
                      b'"model":"tiny-llama","choices":[],"usage":{"prompt_tokens":32,'
                      b'"total_tokens":%d,"completion_tokens":%d}}\n\n' % (32 + n, n))
                writer.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            end = b"data: [DONE]\n\n"
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(end), end))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@contextmanager
def sse_server(gap_s: float = 0.002, served: str = "tiny-llama", hit_share: float = 0.0
               ) -> Iterator[str]:
    """Serve until the block ends (see :class:`Fake`); yields the base URL."""
    fake = Fake(gap_s, served, hit_share)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    async def serve() -> None:
        server = await asyncio.start_server(lambda r, w: _handle(r, w, fake), "127.0.0.1", 0)
        holder["server"] = server
        holder["port"] = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            with contextlib.suppress(asyncio.CancelledError):
                await server.serve_forever()

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}"
    finally:
        loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(loop)])
        thread.join(5)


async def serve_forever(port: int, gap_s: float, plain: bool = False, clock: bool = False
                        ) -> None:
    fake = Fake(gap_s, plain=plain, clock=clock)
    # reuse_port: several processes can serve one port (the kernel spreads the connections)
    server = await asyncio.start_server(lambda r, w: _handle(r, w, fake), "127.0.0.1", port,
                                        backlog=1024, reuse_port=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    import sys

    asyncio.run(serve_forever(int(sys.argv[1]), float(sys.argv[2]), "plain" in sys.argv[3:],
                              "clock" in sys.argv[3:]))
