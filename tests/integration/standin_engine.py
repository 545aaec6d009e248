"""TEST ONLY: a stand-in engine, a real process serving a real OpenAI-style HTTP API (aiohttp),
started by the real process launcher in place of vLLM (``tests.integration.fake_engine:standin``)
so that faults around a study (an engine stopped by SIGSTOP, a slow start, a port taken, a full
disk, a tracking server or database restarted) are tried on real processes in seconds.

It serves ``/health``, ``/v1/models``, ``/metrics`` (vLLM's gauge names) and ``/v1/completions``
(streamed, vLLM-shaped events with continuous usage, or one JSON answer), ``max_tokens`` tokens
``STANDIN_GAP_S`` apart; the prompt's tokens are counted with the model folder's tokenizer. It
writes a line per request to its log, as an engine's access log does. Before it binds its port
it "loads" for ``STANDIN_LOAD_S`` seconds, saying so; the first start of a test (no
``first-start`` file in ``STANDIN_STATE_DIR``) loads for ``STANDIN_FIRST_LOAD_S`` instead. A
port it cannot bind is said as uvicorn says it, and it exits 1.

    python -m tests.integration.standin_engine --model DIR --served-model-name NAME --port N
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from aiohttp import web
from tokenizers import Tokenizer


def say(line: str) -> None:
    """A line in the engine's log; a log it cannot write (a full disk) does not stop it, as
    an engine's logging does not."""
    with contextlib.suppress(OSError):
        print(line, flush=True)


class Engine:
    def __init__(self, served: str, model: Path, gap_s: float) -> None:
        self.served, self.gap_s = served, gap_s
        found = model / "tokenizer.json"
        self.tokenizer = Tokenizer.from_file(str(found)) if found.is_file() else None
        self.running = 0

    def prompt_tokens(self, prompt: object) -> int:
        text = prompt if isinstance(prompt, str) else json.dumps(prompt)
        if self.tokenizer is None:
            return max(1, len(text.split()))
        return len(self.tokenizer.encode(text).ids)

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="")

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.served, "object": "model", "owned_by": "standin"}]})

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=f"vllm:num_requests_running {self.running}\n"
                                 "vllm:num_requests_waiting 0\n"
                                 "vllm:kv_cache_usage_perc 0.01\n")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = max(1, int(body.get("max_tokens") or 16))
        prompt = self.prompt_tokens(body.get("prompt", ""))
        say(f"POST /v1/completions 200 (prompt {prompt}, output {n})")
        self.running += 1
        try:
            if not body.get("stream"):
                return web.json_response({
                    "id": "cmpl-standin", "object": "text_completion", "created": 0,
                    "model": self.served, "choices": [
                        {"index": 0, "text": " a" * n, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": n,
                              "total_tokens": prompt + n}})
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            for i in range(n):
                event = {"id": "cmpl-standin", "object": "text_completion", "created": 0,
                         "model": self.served, "choices": [
                             {"index": 0, "text": " a", "logprobs": None,
                              "finish_reason": "length" if i == n - 1 else None}],
                         "usage": {"prompt_tokens": prompt, "completion_tokens": i + 1,
                                   "total_tokens": prompt + i + 1}}
                await resp.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                await asyncio.sleep(self.gap_s)
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        finally:
            self.running -= 1


def load_seconds() -> float:
    """How long this start "loads" before it binds its port."""
    state = os.environ.get("STANDIN_STATE_DIR")
    first = os.environ.get("STANDIN_FIRST_LOAD_S")
    if state and first:
        marker = Path(state) / "first-start"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(os.getpid()))
            return float(first)
    return float(os.environ.get("STANDIN_LOAD_S", "0.2"))


async def serve(args: argparse.Namespace) -> None:
    engine = Engine(args.served_model_name, Path(args.model),
                    float(os.environ.get("STANDIN_GAP_S", "0.005")))
    app = web.Application()
    app.add_routes([web.get("/health", engine.health), web.get("/v1/models", engine.models),
                    web.get("/metrics", engine.metrics),
                    web.post("/v1/completions", engine.completions)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, args.host, args.port).start()
    except OSError as exc:
        say(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"('{args.host}', {args.port}): {(exc.strerror or '').lower()}")
        sys.exit(1)
    say(f"serving {engine.served} on http://{args.host}:{args.port}")
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args, knobs = parser.parse_known_args()  # the knobs rendered for vLLM change nothing here
    say(f"stand-in engine, pid {os.getpid()}, knobs {' '.join(knobs) or '(none)'}")
    seconds = load_seconds()
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        say(f"loading weights: {time.monotonic() - t0:.0f}s of {seconds:g}s")
        time.sleep(min(1.0, seconds))
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
