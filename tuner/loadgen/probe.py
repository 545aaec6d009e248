"""Check an endpoint before loading it: reachable, OpenAI-compatible, serves the model, and
which request extras it accepts (forced output lengths, usage in the stream)."""

from __future__ import annotations

import difflib
import json
import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any

import httpx

from tuner.core import EndpointError
from tuner.loadgen.client import Api, ServerCaps, chunk_text, request_body
from tuner.loadgen.route import plain_client
from tuner.workload import PlannedRequest

log = logging.getLogger(__name__)

PROBE_TOKENS = 4


ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/metrics", "/health")


def normalise_endpoint(url: str) -> str:
    """``http://host:port`` (and any base path) from a URL that may end in ``/`` or ``/v1``;
    an EndpointError that shows the URL to give when it has no scheme or is a route."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        raise EndpointError(f"--endpoint {url!r} needs a scheme: give http://{url}")
    if not url.startswith(("http://", "https://")):
        raise EndpointError(f"--endpoint {url!r}: give an http:// or https:// URL")
    for route in ROUTES:
        if url.endswith(route):
            base = url[:-len(route)]
            raise EndpointError(f"--endpoint {url!r} is the {route} route; give the base URL "
                                f"{base}")
    if url.endswith("/v1"):
        url = url[:-3]
    return url


async def check_serves(url: str, model: str) -> None:
    """The endpoint is reachable, OpenAI-compatible and serves ``model`` (checked before
    anything is loaded for the model, so a misspelt name is not taken for a missing
    tokenizer). A model its list does not name, or a list that cannot be read, is served if a
    one-token request for it is answered and one for a name nobody serves is refused:
    transformers serve lists its hub cache (and answers 500 where there is none), not the
    folder it was started with, and refuses any other name; llama-server answers any name,
    so its list decides."""
    async with plain_client(url, httpx.Timeout(60.0, connect=5.0)) as http:
        models, unreadable = await served_models(http, url)
        if model in models or await _serves_only(http, url, model):
            return
    if unreadable is not None:
        raise EndpointError(f"{url} is not an OpenAI-compatible server: {unreadable}")
    close = difflib.get_close_matches(model, models, n=1, cutoff=0.6)
    meant = f"did you mean {close[0]!r}? " if close else ""
    raise EndpointError(f"{url} does not serve model {model!r}; it serves "
                        f"{', '.join(models) or 'nothing'}: {meant}set `model:` in the "
                        "workload")


async def served_models(http: httpx.AsyncClient, url: str) -> tuple[list[str], str | None]:
    """The models ``GET /v1/models`` names, and why it named none when it could not be read
    (None: it was read). An endpoint that cannot be reached is an EndpointError."""
    try:
        resp = await http.get(f"{url}/v1/models")
    except httpx.ConnectError as exc:
        raise EndpointError(f"cannot reach {url}: connection refused; start the server or fix "
                            "--endpoint") from exc
    except httpx.HTTPError as exc:
        raise EndpointError(f"cannot reach {url}: {type(exc).__name__}; check --endpoint") from exc
    if resp.status_code != 200:
        return [], f"GET /v1/models answered HTTP {resp.status_code}"
    try:
        return [str(m["id"]) for m in resp.json()["data"]], None
    except (ValueError, KeyError, TypeError):
        return [], "GET /v1/models did not return a model list"


async def _serves_only(http: httpx.AsyncClient, url: str, model: str) -> bool:
    """Whether the server answers a request for ``model`` and refuses one for another name
    (a server that answers any name does not say which model it serves)."""
    return (await _answers_for(http, url, model)
            and not await _answers_for(http, url, f"{model}-{uuid.uuid4().hex[:8]}-not-served"))


async def _answers_for(http: httpx.AsyncClient, url: str, model: str) -> bool:
    """Whether a one-token request naming ``model`` is answered (completions, else chat). A
    connection the server closed after an error (Uvicorn after a 500) is tried once more on a
    new one."""
    for path, prompt in (("/v1/completions", {"prompt": "Hello"}),
                         ("/v1/chat/completions",
                          {"messages": [{"role": "user", "content": "Hello"}]})):
        body = {"model": model, "max_tokens": 1, **prompt}
        try:
            try:
                resp = await http.post(f"{url}{path}", json=body)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                resp = await http.post(f"{url}{path}", json=body)
        except httpx.HTTPError:
            return False
        if resp.status_code != 404:
            return resp.status_code == 200
    return False


@dataclass(frozen=True)
class ProbeReply:
    """What a test request's stream showed: its status, its last usage, its text, and whether
    every event that carried text carried usage too (continuous usage)."""

    status: int
    usage: dict[str, Any] | None
    text: str
    usage_in_every_event: bool = False


async def _try(http: httpx.AsyncClient, url: str, api: Api, body: dict[str, Any]) -> ProbeReply:
    """POST a streaming request and read what its stream shows."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    usage = None
    text = ""
    texts = counted = 0
    async with http.stream("POST", f"{url}{path}", json=body) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return ProbeReply(resp.status_code, None, resp.text[:200])
        async for line in resp.aiter_lines():
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            try:
                event = json.loads(line[5:])
            except json.JSONDecodeError as exc:
                raise EndpointError(f"{url} is not an OpenAI-compatible server: its stream is "
                                    "not JSON server-sent events") from exc
            usage = event.get("usage") or usage
            said = "".join(chunk_text(c) for c in event.get("choices") or [])
            if said:
                texts += 1
                counted += bool(event.get("usage"))
            text += said
    return ProbeReply(200, usage, text, usage_in_every_event=texts > 0 and counted == texts)


async def probe_endpoint(url: str, model: str, api: Api, prompt: str, prompt_tokens: int, *,
                         force_lengths: bool = True) -> ServerCaps:
    """Validate the endpoint and find what it accepts. Raises EndpointError (bad input).
    ``force_lengths=False`` (an engine known to ignore them) never sends the extras."""
    await check_serves(url, model)
    async with plain_client(url, httpx.Timeout(60.0, connect=5.0)) as http:
        req = PlannedRequest(0, "probe", None, prompt_tokens, PROBE_TOKENS, prompt)
        caps = ServerCaps()
        # Drop extras one at a time until the server accepts the request; where min_tokens is
        # refused, output lengths may still be forced by a generation_config (transformers).
        attempts = [caps, replace(caps, continuous_usage=False),
                    replace(caps, continuous_usage=False, lengths_in_generation_config=True),
                    replace(caps, continuous_usage=False, forces_output_length=False),
                    ServerCaps(False, False, False)]
        if not force_lengths:
            attempts = [a for a in attempts if not a.forces_output_length]
        last = ""
        for attempt in attempts:
            body = request_body(req, model=model, api=api, caps=attempt, temperature=0.0)
            try:
                got = await _try(http, url, api, body)
            except httpx.HTTPError as exc:
                raise EndpointError(f"{url} failed a test request ({type(exc).__name__}); is it "
                                    "an OpenAI-compatible server?") from exc
            if got.status == 200:
                # Continuous usage is usage in every event, not only in the last: a server that
                # ignores the option and counts once at the end (llama-server) gets every event
                # counted as a token, or all its tokens would land on the last read.
                continuous = attempt.continuous_usage and got.usage_in_every_event
                overhead = None
                if api == "chat" and got.usage and "prompt_tokens" in got.usage:
                    overhead = int(got.usage["prompt_tokens"]) - prompt_tokens
                caps = replace(attempt, continuous_usage=continuous,
                               stream_usage=attempt.stream_usage and got.usage is not None,
                               chat_template_tokens=overhead)
                if not got.text and not got.usage:
                    raise EndpointError(f"{url} is not an OpenAI-compatible server: a test "
                                        f"request to {api} streamed no text")
                log.debug("endpoint %s accepts %s", url, caps)
                return caps
            if got.status == 404:
                raise EndpointError(f"{url} has no /v1/{'chat/' if api == 'chat' else ''}"
                                    f"completions route; set `api:` in the workload to one the "
                                    "server has")
            last = f"HTTP {got.status}: {got.text}"
        raise EndpointError(f"{url} refused every test request ({last})")
