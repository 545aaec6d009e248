"""Greedy answers: the request, the answer parsed with and without log-probabilities, and an
engine that refuses log-probabilities asked again without them (httpx's mock transport)."""

from __future__ import annotations

import json

import httpx
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from tuner.core import EndpointError
from tuner.loadgen import event_loop
from tuner.measurement.greedy_probe import greedy_answers, greedy_body, parse_answer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """Byte-level, one token per byte: enough to tokenize answers."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def test_a_greedy_request_is_temperature_zero_and_not_streamed() -> None:
    body = greedy_body("hi", model="m", api="completions", max_tokens=8, logprobs=True)
    assert body == {"model": "m", "max_tokens": 8, "temperature": 0.0, "stream": False,
                    "prompt": "hi", "logprobs": 1}
    chat = greedy_body("hi", model="m", api="chat", max_tokens=8, logprobs=False)
    assert chat["messages"] == [{"role": "user", "content": "hi"}]
    assert "logprobs" not in chat


def test_completions_answers_carry_the_engines_tokens_and_log_probabilities(
        tokenizer: Tokenizer) -> None:
    data = {"choices": [{"text": " the end", "logprobs": {
        "tokens": [" the", " end"], "token_logprobs": [-0.5, -1.25]}}]}
    got = parse_answer("p", data, "completions", tokenizer)
    assert (got.text, got.tokens, got.logprobs) == (" the end", [" the", " end"], [-0.5, -1.25])
    assert tokenizer.decode(got.text_tokens) == " the end"


def test_chat_answers_carry_their_tokens_and_log_probabilities(tokenizer: Tokenizer) -> None:
    data = {"choices": [{"message": {"content": "ok"}, "logprobs": {"content": [
        {"token": "o", "logprob": -0.1}, {"token": "k", "logprob": -0.2}]}}]}
    got = parse_answer("p", data, "chat", tokenizer)
    assert (got.tokens, got.logprobs) == (["o", "k"], [-0.1, -0.2])


def test_an_answer_without_log_probabilities_has_only_its_texts_tokens(
        tokenizer: Tokenizer) -> None:
    got = parse_answer("p", {"choices": [{"text": "abc", "logprobs": None}]}, "completions",
                       tokenizer)
    assert got.tokens is None
    assert got.logprobs is None
    assert got.text_tokens


def test_an_engine_refusing_log_probabilities_is_asked_again_without(
        tokenizer: Tokenizer) -> None:
    bodies: list[dict[str, object]] = []

    def serve(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "logprobs" in body:
            return httpx.Response(400, json={"error": "logprobs is not supported"})
        return httpx.Response(200, json={"choices": [{"text": f"answer to {body['prompt']}"}]})

    got = event_loop.run(greedy_answers(
        "http://engine", "m", "completions", tokenizer, max_tokens=4, timeout_s=5,
        prompts=("a", "b"), transport=httpx.MockTransport(serve)))
    assert [a.text for a in got] == ["answer to a", "answer to b"]
    # the first prompt asked twice, the second at once without log-probabilities
    assert ["logprobs" in b for b in bodies] == [True, False, False]
    assert all(b["temperature"] == 0.0 for b in bodies)


def test_an_engine_that_fails_a_greedy_request_is_an_endpoint_error(
        tokenizer: Tokenizer) -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="boom")

    with pytest.raises(EndpointError, match="HTTP 500"):
        event_loop.run(greedy_answers("http://engine", "m", "completions", tokenizer,
                                      max_tokens=4, timeout_s=5, prompts=("a",),
                                      transport=httpx.MockTransport(broken)))
