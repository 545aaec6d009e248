"""Async OpenAI-compatible streaming client: one request in, one record out.

One client per run, keep-alive connections as many as the load needs, each request bounded in
time as a whole. Requests go through httpx's API on the transport ``route`` chose: by default
asyncio protocols parsed by httptools (``raw_http``), a network read being one callback; httpx's
own or aiohttp's otherwise (experiments/benchmarks/client_cost.py compares them). The stream
is split into events here; each network read gets one timestamp and, where the server counts
tokens in every event (vLLM's continuous usage), its last count is read from the bytes without
parsing JSON.
Every failure becomes ``record.error``; only cancellation propagates (after the record says
so). A request served other than planned says so in ``record.mismatch``; one whose forced
output was cut short is an error.

A hostile or broken server cannot make a request hold more than a bounded amount of memory:
an event longer than ``MAX_EVENT_BYTES`` (a huge chunk, a body that is not server-sent
events) ends the request with an error, and so does a stream that goes on past twice the
tokens asked for (``max_tokens``: an endless stream); an error's body is read up to
``ERROR_BODY_BYTES``. A body that holds no event is an error that shows how it began (a wrong
content type). The request's timeout bounds the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import orjson

from tuner.loadgen.raw_http import END_GRACE_S, PUSH, Push
from tuner.loadgen.records import ENDED_BY_CLIENT, RequestRecord
from tuner.loadgen.route import DIRECT, Route, make_transport
from tuner.loadgen.sse import DONE, SseSplitter, ends_with_done, last_int, payloads
from tuner.workload import PlannedRequest

Api = Literal["completions", "chat"]
MAX_EVENT_BYTES = 2**20
ERROR_BODY_BYTES = 400


@dataclass(frozen=True)
class ServerCaps:
    """What the server accepted in the probe."""

    forces_output_length: bool = True
    stream_usage: bool = True
    continuous_usage: bool = True
    chat_template_tokens: int | None = None
    lengths_in_generation_config: bool = False
    """Output lengths forced by a ``generation_config`` (JSON) of ``min_new_tokens``, not by
    ``min_tokens`` and ``ignore_eos`` (transformers serve refuses those fields)"""


def request_body(
    req: PlannedRequest, *, model: str, api: Api, caps: ServerCaps, temperature: float
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": req.output_tokens, "stream": True,
                            "temperature": temperature}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": req.prompt}]
    else:
        body["prompt"] = req.prompt
    if caps.stream_usage:
        body["stream_options"] = {"include_usage": True}
        if caps.continuous_usage:
            body["stream_options"]["continuous_usage_stats"] = True
    if caps.forces_output_length and caps.lengths_in_generation_config:
        body["generation_config"] = f'{{"min_new_tokens": {req.output_tokens}}}'
    elif caps.forces_output_length:
        body["min_tokens"] = req.output_tokens
        body["ignore_eos"] = True
    return body


def chunk_text(choice: dict[str, Any]) -> str:
    """Text of one streamed choice: completions ``text`` or chat ``delta`` content/reasoning."""
    if "text" in choice:
        return choice.get("text") or ""
    delta = choice.get("delta") or {}
    return (delta.get("content") or delta.get("reasoning_content")
            or delta.get("reasoning") or "")


def plan_mismatch(rec: RequestRecord, caps: ServerCaps) -> str | None:
    """How a finished request differs from its plan: the prompt the server counted (less the
    chat template) and, where lengths are forced, the output it produced."""
    problems = []
    planned_prompt = rec.input_tokens + (caps.chat_template_tokens or 0)
    if rec.prompt_tokens is not None and rec.prompt_tokens != planned_prompt:
        problems.append(f"prompt {rec.prompt_tokens} tokens, planned {planned_prompt}")
    if (caps.forces_output_length and rec.error is None
            and rec.generated != rec.planned_output_tokens):
        problems.append(f"output {rec.generated} tokens, forced {rec.planned_output_tokens}")
    return "; ".join(problems) or None


class Reading:
    """One response being read: each network read's bytes in, the record filled."""

    __slots__ = ("caps", "rec", "split", "counted", "tokens", "most", "head", "events")

    def __init__(self, caps: ServerCaps, rec: RequestRecord) -> None:
        self.caps, self.rec = caps, rec
        self.split = SseSplitter()
        self.counted = 0
        self.tokens = 0
        self.most = 2 * rec.planned_output_tokens + 16
        """Tokens past which a stream is endless (a server honours ``max_tokens``)."""
        self.head = b""
        self.events = False

    def read(self, chunk: bytes, now: int) -> bool:
        """One read's bytes, arrived at ``now``; True once the response is over ([DONE], or
        an error the record now holds)."""
        if not self.head:
            self.head = chunk[:60]
        block = self.split.feed(chunk)
        rec = self.rec
        if len(self.split.pending) > MAX_EVENT_BYTES:
            rec.error = (f"an event longer than {MAX_EVENT_BYTES // 2**20} MiB: not OpenAI-style "
                         "server-sent events")
            return True
        if not block:
            return False
        if not self.events:
            self.events = b"data:" in block
        try:
            tokens, text = self._count(block)
        except ValueError as exc:
            rec.error = str(exc)
            return True
        self.tokens += tokens
        if self.tokens > self.most:
            rec.error = (f"the stream went on past {self.tokens} tokens, "
                         f"{rec.planned_output_tokens} asked for (max_tokens): an endless stream")
            return True
        if tokens > 0 or text:
            if rec.first_token_ns is None:
                rec.first_token_ns = now
            rec.add_chunk(now, tokens)
        if ends_with_done(block):
            rec.done_ns = now
            return True
        return False

    def ended(self, req: PlannedRequest, now: int) -> None:
        """The stream closed. Some servers close it without [DONE]; a clean end with all the
        output still counts, one cut short of a forced length does not."""
        rec = self.rec
        if rec.done_ns is not None or rec.error is not None:
            return
        if not self.events:
            began = self.head.decode("utf-8", "replace")
            rec.error = (f"no server-sent event with data: the body began {began!r}" if began
                         else "an empty body: no server-sent event with data")
            return
        if self.caps.forces_output_length and rec.generated < req.output_tokens:
            rec.error = (f"stream ended without [DONE] after {rec.generated} of "
                         f"{req.output_tokens} forced output tokens")
        elif rec.chunk_ns:
            rec.done_ns = now

    def _count(self, block: bytes) -> tuple[int, bool]:
        """Tokens and whether text arrived in one read's events. With continuous usage the
        read's last count says it all and no JSON is parsed; otherwise (or when an event may
        carry an error) every event is parsed. Raises ValueError with the record's error."""
        rec = self.rec
        if self.caps.continuous_usage and b'"error"' not in block:
            done = last_int(block, b"completion_tokens")
            if done is not None:
                rec.output_tokens = done
                prompt = last_int(block, b"prompt_tokens")
                if prompt is not None:
                    rec.prompt_tokens = prompt
                tokens, self.counted = done - self.counted, done
                return tokens, False
        tokens, text = 0, False
        for payload in payloads(block):
            if payload == DONE:
                break
            event = parse_event(payload)
            if "error" in event:
                raise ValueError(f"server error: {orjson.dumps(event['error'])[:200].decode()}")
            usage = event.get("usage")
            if usage:
                rec.prompt_tokens = usage.get("prompt_tokens", rec.prompt_tokens)
                done = usage.get("completion_tokens")
                if done is not None:
                    rec.output_tokens = done
                    if self.caps.continuous_usage:
                        tokens, self.counted = tokens + done - self.counted, done
            said = "".join(chunk_text(c) for c in event.get("choices") or [])
            if said:
                text = True
                if not self.caps.continuous_usage:
                    tokens += 1
        return tokens, text


class StreamClient:
    """Sends planned requests and fills their records. Use as an async context manager.

    Every request goes through httpx's API; ``route`` picks the transport under it and the
    proxy (``route``). A transport that can push a body (the raw one: ``raw_http.PUSH``) hands
    each network read to the reader with the time it arrived, with no task wake-up per read;
    on the others the body is iterated and each read timed as it is taken."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api: Api,
        caps: ServerCaps,
        pool_size: int,
        timeout_s: float,
        temperature: float = 0.0,
        headers: dict[str, str] | None = None,
        route: Route = DIRECT,
    ) -> None:
        self.model = model
        self.api = api
        self.caps = caps
        self.temperature = temperature
        self.route = route
        self._path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
        # The request's whole time is bounded (``send``); a read timeout would re-arm a timer
        # on every network read, 5% of the client's CPU per token.
        self.timeout_s = timeout_s
        limits = httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        self._http = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(None, connect=10.0), trust_env=False,
            headers={"content-type": "application/json", "accept": "text/event-stream",
                     **(headers or {})},
            transport=make_transport(route, limits))

    async def __aenter__(self) -> StreamClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def send(self, req: PlannedRequest, rec: RequestRecord, t0_ns: int) -> None:
        """Send ``req`` now; record every read's arrival on the clock that started at t0_ns."""
        body = orjson.dumps(request_body(req, model=self.model, api=self.api, caps=self.caps,
                                         temperature=self.temperature))
        reading = Reading(self.caps, rec)
        rec.sent_ns = time.perf_counter_ns() - t0_ns
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._exchange(body, reading, t0_ns)
            if rec.status == 200:
                reading.ended(req, time.perf_counter_ns() - t0_ns)
        except TimeoutError:
            rec.error = f"timeout: no end after {self.timeout_s:g} s (request_timeout_s)"
            rec.status = ENDED_BY_CLIENT
        except asyncio.CancelledError:
            rec.error = rec.error or "cancelled"
            rec.status = ENDED_BY_CLIENT
            raise
        except httpx.HTTPError as exc:
            rec.error = http_error(exc)
        except OSError as exc:  # ConnectionError and the rest of the socket's failures
            rec.error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            if rec.error is None and rec.done_ns is None:
                rec.error = "stream ended before [DONE]"
            rec.mismatch = plan_mismatch(rec, self.caps)
            rec.seal()

    async def _exchange(self, body: bytes, reading: Reading, t0_ns: int) -> None:
        rec = reading.rec
        resp: httpx.Response | None = None
        try:
            async with self._http.stream("POST", self._path, content=body) as resp:
                rec.status = resp.status_code
                if resp.status_code != 200:
                    rec.error = f"HTTP {resp.status_code}: {(await error_body(resp))[:200]}"
                    return
                push: Push | None = resp.extensions.get(PUSH)
                if push is not None:
                    await push(lambda chunk, at: reading.read(chunk, at - t0_ns))
                    return
                chunks = resp.aiter_raw()
                async for chunk in chunks:
                    if reading.read(chunk, time.perf_counter_ns() - t0_ns):
                        await drain(chunks)
                        return
        finally:
            if resp is not None:  # closed by now: unbind it from its stream
                resp.stream = SPENT


SPENT = httpx.ByteStream(b"")
"""What a finished response's stream is set to. httpx binds each response and its stream to
each other (``BoundAsyncStream``), a reference cycle per request that holds the request, its
body and headers; only the cyclic collector frees it, and that waits for a run's end
(``gc_paused``): a 30-minute run at 20 req/s kept 400 MB of them. Unbound, reference counting
frees them as soon as the request is done."""


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of an answer the reader is done with (the chunked end after
    [DONE]), so that httpx keeps the connection for the next request; a server that goes on
    sending gets ``END_GRACE_S`` and ``MAX_EVENT_BYTES``, then the connection is dropped."""
    left = MAX_EVENT_BYTES
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(END_GRACE_S):
            async for chunk in chunks:
                left -= len(chunk)
                if left < 0:
                    return


async def error_body(resp: httpx.Response) -> str:
    """The start of an error's body: what the server said, not all it may send."""
    if resp.is_stream_consumed:
        return resp.content[:ERROR_BODY_BYTES].decode("utf-8", "replace")
    said = bytearray()
    async for chunk in resp.aiter_raw():
        said.extend(chunk[:ERROR_BODY_BYTES - len(said)])
        if len(said) >= ERROR_BODY_BYTES:
            break
    return said.decode("utf-8", "replace")


def parse_event(payload: bytes) -> dict[str, Any]:
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise ValueError(f"bad SSE payload: {payload[:100].decode('utf-8', 'replace')}") from None
    if not isinstance(event, dict):
        raise ValueError(f"bad SSE payload: {payload[:100].decode('utf-8', 'replace')}")
    return event


def http_error(exc: httpx.HTTPError) -> str:
    """What a failed request's record says. The aiohttp transport maps every dropped connection
    to a ConnectTimeout; the record names the cause aiohttp saw instead."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    name = type(cause).__name__
    if isinstance(exc, httpx.TimeoutException) and "Timeout" in name:
        return f"timeout: {name}"
    return f"{name}: {cause}"[:300]
