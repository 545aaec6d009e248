"""The endpoint probe's reading of a test request's stream (httpx's MockTransport at the seam):
continuous usage means usage in every event that carries text, not only in the last one."""

import json

import httpx
import pytest

from tuner.loadgen.probe import _try


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
