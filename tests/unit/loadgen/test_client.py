"""The streaming client against scripted SSE bodies (httpx's MockTransport at the seam)."""

import json

import httpx
import pytest

from tuner.loadgen.client import ServerCaps, StreamClient
from tuner.loadgen.records import RequestRecord
from tuner.loadgen.route import Route
from tuner.workload import PlannedRequest

REQ = PlannedRequest(0, "chat", None, 10, 4, "hello")


def sse(*events: object, done: bool = True) -> list[bytes]:
    """One network read per event."""
    reads = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    return reads + ([b"data: [DONE]\n\n"] if done else [])


def reply(reads: list[bytes]) -> httpx.Response:
    async def body():  # type: ignore[no-untyped-def]
        for chunk in reads:
            yield chunk
    return httpx.Response(200, content=body())


def record() -> RequestRecord:
    return RequestRecord(index=0, class_name="chat", prefix_group=None, input_tokens=10,
                         planned_output_tokens=4, scheduled_ns=0)


DEFAULT_CAPS = ServerCaps()


async def send(handler, caps: ServerCaps = DEFAULT_CAPS,  # type: ignore[no-untyped-def]
               api: str = "completions") -> tuple[RequestRecord, list[dict[str, object]]]:
    bodies: list[dict[str, object]] = []

    def wrapped(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return handler(request)

    # httpx's MockTransport at the seam; the reading of the stream is the raw transport's too.
    client = StreamClient("http://x", model="m", api=api, caps=caps,  # type: ignore[arg-type]
                          pool_size=4, timeout_s=5, route=Route("httpx"))
    client._http = httpx.AsyncClient(base_url="http://x", transport=httpx.MockTransport(wrapped))
    rec = record()
    async with client:
        await client.send(REQ, rec, 0)
    return rec, bodies


def usage(done: int) -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": done, "total_tokens": 10 + done}


async def test_chunks_with_several_tokens_and_none_are_counted_by_usage() -> None:
    body = sse({"choices": [{"text": "a"}], "usage": usage(1)},
               {"choices": [{"text": "bcd"}], "usage": usage(3)},   # two tokens in one chunk
               {"choices": [{"text": "e"}], "usage": usage(4)},
               {"choices": [], "usage": usage(4)})                  # usage only, no token
    rec, bodies = await send(lambda r: reply(body))
    assert rec.ok
    assert rec.output_tokens == 4
    assert rec.prompt_tokens == 10
    assert list(rec.chunk_tokens) == [1, 2, 1]
    assert len(rec.itl_ns()) == 3
    sent = bodies[0]
    assert sent["min_tokens"] == 4
    assert sent["ignore_eos"] is True
    assert sent["max_tokens"] == 4
    assert sent["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}


async def test_chat_deltas_and_a_role_only_first_chunk() -> None:
    body = sse({"choices": [{"delta": {"role": "assistant"}}]},
               {"choices": [{"delta": {"content": "hi"}}]},
               {"choices": [{"delta": {"content": " there"}}]},
               {"choices": [], "usage": usage(2)})
    caps = ServerCaps(continuous_usage=False)
    rec, bodies = await send(lambda r: reply(body), caps, api="chat")
    assert rec.ok
    assert list(rec.chunk_tokens) == [1, 1]
    assert rec.output_tokens == 2
    assert bodies[0]["messages"] == [{"role": "user", "content": "hello"}]
    assert rec.first_token_ns == rec.chunk_ns[0]


async def test_without_forced_lengths_no_extras_are_sent() -> None:
    body = sse({"choices": [{"text": "x"}]})
    caps = ServerCaps(forces_output_length=False, stream_usage=False, continuous_usage=False)
    rec, bodies = await send(lambda r: reply(body), caps)
    assert "min_tokens" not in bodies[0]
    assert "stream_options" not in bodies[0]
    assert rec.ok
    assert rec.output_tokens is None
    assert rec.generated == 1


@pytest.mark.parametrize(("handler", "needle"), [
    (lambda r: httpx.Response(503, text="overloaded"), "HTTP 503: overloaded"),
    (lambda r: reply([b'data: {"error": {"message": "boom"}}\n\n']), "server error"),
    (lambda r: reply([b"data: {not json\n\n"]), "bad SSE payload"),
])
async def test_failures_are_records_not_exceptions(handler, needle: str) -> None:  # type: ignore[no-untyped-def]
    rec, _ = await send(handler)
    assert not rec.ok
    assert needle in (rec.error or "")


async def test_connection_errors_are_records() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    rec, _ = await send(refuse)
    assert rec.error is not None
    assert rec.error.startswith("ConnectError")


async def test_a_stream_cut_short_of_its_forced_length_is_an_error() -> None:
    """A server that closes the stream without [DONE] after 2 of 4 forced tokens: the request
    was not served as asked, so it is not a success."""
    body = sse({"choices": [{"text": "a"}], "usage": usage(1)},
               {"choices": [{"text": "b"}], "usage": usage(2)}, done=False)
    rec, _ = await send(lambda r: reply(body))
    assert not rec.ok
    assert "after 2 of 4 forced output tokens" in (rec.error or "")


async def test_a_complete_stream_without_done_still_counts() -> None:
    body = sse(*({"choices": [{"text": "a"}], "usage": usage(i)} for i in range(1, 5)),
               done=False)
    rec, _ = await send(lambda r: reply(body))
    assert rec.ok
    assert rec.mismatch is None


async def test_a_record_that_does_not_match_its_plan_says_so() -> None:
    """The server counted 8 prompt tokens for 10 planned and stopped at 3 of 4 forced."""
    short = {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11}
    body = sse({"choices": [{"text": "abc"}], "usage": short})
    rec, _ = await send(lambda r: reply(body))
    assert rec.mismatch == "prompt 8 tokens, planned 10; output 3 tokens, forced 4"


async def test_reads_that_split_and_merge_events_count_the_same_tokens() -> None:
    """Events cut across reads and several events in one read: each read is one timestamp
    with the tokens it completed."""
    whole = b"".join(sse(*({"choices": [{"text": "a"}], "usage": usage(i)}
                           for i in range(1, 5))))
    cut = whole.index(b"usage", 40)
    reads = [whole[:cut], whole[cut:cut + 3], whole[cut + 3:]]
    rec, _ = await send(lambda r: reply(reads))
    assert rec.ok
    assert rec.output_tokens == 4
    assert sum(rec.chunk_tokens) == 4
    assert len(rec.chunk_ns) <= 3


async def test_an_error_event_among_counted_ones_is_found() -> None:
    reads = [b"".join(sse({"choices": [{"text": "a"}], "usage": usage(1)}, done=False))
             + b'data: {"error": {"message": "boom"}}\n\n']
    rec, _ = await send(lambda r: reply(reads))
    assert "server error" in (rec.error or "")


async def test_a_request_the_tuner_cancels_does_not_read_as_a_success() -> None:
    """Cancelled mid-stream (an early stop, an interrupt): status 499, never the 200 the server
    had answered, against the test SSE server."""
    import asyncio

    from tests.sse_server import sse_server
    from tuner.loadgen.records import ENDED_BY_CLIENT

    with sse_server(gap_s=0.2) as url:
        async with StreamClient(url, model="tiny-llama", api="completions", caps=DEFAULT_CAPS,
                                pool_size=4, timeout_s=5) as client:
            rec = record()
            task = asyncio.create_task(client.send(REQ, rec, 0))
            await asyncio.sleep(0.5)  # a token every 0.2 s: streaming by now, far from done
            assert rec.chunk_ns
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert rec.error == "cancelled"
    assert rec.status == ENDED_BY_CLIENT == 499
