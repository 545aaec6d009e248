"""Async OpenAI-compatible streaming client: one request in, one record out.

One ``httpx.AsyncClient`` per run, with explicit timeouts and a connection pool
at least as large as the load. Every failure becomes ``record.error``; only
cancellation propagates (after the record says so). A request served other than
planned says so in ``record.mismatch``; one whose forced output was cut short is an error.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from tuner.loadgen.records import RequestRecord
from tuner.workload.plan import PlannedRequest

Api = Literal["completions", "chat"]


@dataclass(frozen=True)
class ServerCaps:
    """What the server accepted in the probe."""

    forces_output_length: bool = True
    stream_usage: bool = True
    continuous_usage: bool = True
    chat_template_tokens: int | None = None


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
    if caps.forces_output_length:
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


class StreamClient:
    """Sends planned requests and fills their records. Use as an async context manager."""

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
    ) -> None:
        self.model = model
        self.api = api
        self.caps = caps
        self.temperature = temperature
        self._path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
        limits = httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        timeout = httpx.Timeout(timeout_s, connect=10.0, pool=None)
        self._http = httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout,
                                       headers=headers)

    async def __aenter__(self) -> StreamClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def send(self, req: PlannedRequest, rec: RequestRecord, t0_ns: int) -> None:
        """Send ``req`` now; record every chunk's arrival on the clock that started at t0_ns."""
        body = request_body(req, model=self.model, api=self.api, caps=self.caps,
                            temperature=self.temperature)
        rec.sent_ns = time.perf_counter_ns() - t0_ns
        try:
            async with self._http.stream("POST", self._path, json=body) as resp:
                rec.status = resp.status_code
                if resp.status_code != 200:
                    text = (await resp.aread()).decode("utf-8", "replace")
                    rec.error = f"HTTP {resp.status_code}: {text[:200]}"
                    return
                await self._read_stream(resp, req, rec, t0_ns)
        except asyncio.CancelledError:
            rec.error = rec.error or "cancelled"
            raise
        except httpx.TimeoutException as exc:
            rec.error = f"timeout: {type(exc).__name__}"
        except httpx.HTTPError as exc:
            rec.error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            if rec.error is None and rec.done_ns is None:
                rec.error = "stream ended before [DONE]"
            rec.mismatch = plan_mismatch(rec, self.caps)

    async def _read_stream(self, resp: httpx.Response, req: PlannedRequest, rec: RequestRecord,
                           t0_ns: int) -> None:
        seen_tokens = 0
        async for line in resp.aiter_lines():
            if not line.startswith("data:"):
                continue
            now = time.perf_counter_ns() - t0_ns
            data = line[5:].strip()
            if data == "[DONE]":
                rec.done_ns = now
                return
            try:
                event = json.loads(data)
            except json.JSONDecodeError:
                rec.error = f"bad SSE payload: {data[:100]}"
                return
            if "error" in event:
                rec.error = f"server error: {json.dumps(event['error'])[:200]}"
                return
            usage = event.get("usage")
            tokens = 0
            if usage:
                rec.prompt_tokens = usage.get("prompt_tokens", rec.prompt_tokens)
                done = usage.get("completion_tokens")
                if done is not None:
                    rec.output_tokens = done
                    if self.caps.continuous_usage:
                        tokens, seen_tokens = done - seen_tokens, done
            choices = event.get("choices") or []
            text = "".join(chunk_text(c) for c in choices)
            if not self.caps.continuous_usage and text:
                tokens = 1
            if tokens > 0 or text:
                if rec.first_token_ns is None:
                    rec.first_token_ns = now
                rec.chunk_ns.append(now)
                rec.chunk_tokens.append(tokens)
        # Some servers close the stream without [DONE]; a clean end with all the output
        # still counts, one cut short of a forced length does not.
        if self.caps.forces_output_length and rec.generated < req.output_tokens:
            rec.error = (f"stream ended without [DONE] after {rec.generated} of "
                         f"{req.output_tokens} forced output tokens")
        elif rec.chunk_ns:
            rec.done_ns = time.perf_counter_ns() - t0_ns
