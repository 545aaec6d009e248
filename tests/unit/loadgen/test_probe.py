"""The endpoint probe (httpx's MockTransport at the seam): continuous usage means usage in every
event that carries text, not only in the last one; a server pinned to a model it does not list
serves it; lengths are forced by a generation_config where min_tokens is refused."""

import json

import httpx
import pytest

from tuner.core import EndpointError
from tuner.loadgen import probe
from tuner.loadgen.client import request_body
from tuner.loadgen.probe import _try
from tuner.workload import PlannedRequest


def stream(*events: dict[str, object]) -> httpx.MockTransport:
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    return httpx.MockTransport(lambda request: httpx.Response(200, content=body))


def usage(done: int) -> dict[str, int]:
    return {"prompt_tokens": 8, "completion_tokens": done, "total_tokens": 8 + done}


@pytest.mark.parametrize(("events", "every"), [
    # vLLM with continuous_usage_stats: a count in every event, and a usage-only last one
    ([{"choices": [{"text": "a"}], "usage": usage(1)},
      {"choices": [{"text": "b"}], "usage": usage(2)},
      {"choices": [], "usage": usage(2)}], True),
    # llama-server: accepts the option, counts once, in the last event (b11312)
    ([{"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}]},
      {"choices": [{"text": "", "finish_reason": "length"}], "usage": usage(2)}], False),
    # a count on the last text event only
    ([{"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}], "usage": usage(2)}], False),
    ([{"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}]}], False),  # no usage at all
])
async def test_usage_counts_as_continuous_only_when_every_text_event_has_it(
        events: list[dict[str, object]], every: bool) -> None:
    async with httpx.AsyncClient(transport=stream(*events)) as http:
        got = await _try(http, "http://x", "completions", {})
    assert got.status == 200
    assert got.text == "ab"
    assert got.usage_in_every_event is every
    assert (got.usage is None) is (events[-1].get("usage") is None)


FORCED = "/models/tiny"


def pinned_server(request: httpx.Request) -> httpx.Response:
    """What transformers serve 5.19 answers, started on FORCED: its model list is its hub cache
    (none here: HTTP 500), a request naming another model is refused with 400, fields outside
    its params are refused with 422, and the last streamed event carries the usage."""
    if request.url.path == "/v1/models":  # no hub cache: scan_cache_dir raises, FastAPI 500s
        return httpx.Response(500, text="Internal Server Error")
    body = json.loads(request.content)
    if body.get("model") != FORCED:
        return httpx.Response(400, json={"detail": f"Server is pinned to '{FORCED}'"})
    unexpected = {"min_tokens", "ignore_eos"} & set(body)
    if unexpected:
        return httpx.Response(422, json={"detail": f"Unexpected fields: {unexpected}"})
    made = int(json.loads(body["generation_config"])["min_new_tokens"]
               if "generation_config" in body else 1)
    events = [{"choices": [{"text": "x", "index": 0}]} for _ in range(made)]
    events.append({"choices": [{"text": "", "finish_reason": "length"}], "usage": usage(made)})
    text = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
    return httpx.Response(200, content=text)


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    real = httpx.AsyncClient

    def client(**kwargs: object) -> httpx.AsyncClient:
        return real(transport=httpx.MockTransport(pinned_server), **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(probe.httpx, "AsyncClient", client)


@pytest.mark.usefixtures("pinned")
async def test_a_server_that_lists_not_its_forced_model_serves_it_when_a_request_is_answered(
        ) -> None:
    await probe.check_serves("http://x", FORCED)
    with pytest.raises(EndpointError, match="GET /v1/models answered HTTP 500"):
        await probe.check_serves("http://x", "tiny")


@pytest.mark.usefixtures("pinned")
async def test_lengths_go_in_a_generation_config_where_min_tokens_is_refused() -> None:
    caps = await probe.probe_endpoint("http://x", FORCED, "completions", "Hello", 3)
    assert caps.forces_output_length
    assert caps.lengths_in_generation_config
    assert not caps.continuous_usage
    assert caps.stream_usage
    req = PlannedRequest(1, "chat", None, 3, 12, "Hello")
    body = request_body(req, model=FORCED, api="completions", caps=caps, temperature=0.0)
    assert json.loads(body["generation_config"]) == {"min_new_tokens": 12}
    assert "min_tokens" not in body
    assert "ignore_eos" not in body


async def test_a_model_missing_from_a_readable_list_is_served_when_a_request_is_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def listed_empty(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":  # a hub cache without the forced folder
            return httpx.Response(200, json={"object": "list", "data": [{"id": "org/other"}]})
        return pinned_server(request)

    real = httpx.AsyncClient
    monkeypatch.setattr(probe.httpx, "AsyncClient", lambda **kw: real(
        transport=httpx.MockTransport(listed_empty), **kw))
    await probe.check_serves("http://x", FORCED)
    with pytest.raises(EndpointError, match="does not serve model 'tiny'; it serves org/other"):
        await probe.check_serves("http://x", "tiny")
