"""A running engine's greedy answers to a fixed set of prompts: what the quality check of
lossy knobs compares (:mod:`tuner.metrics.token_agreement`).

The prompts are sent one at a time (a batch of one: the answer does not depend on what else
the engine is serving), decoded greedily (temperature 0) up to ``max_tokens`` tokens, with
each token's log-probability where the engine returns it: an engine that refuses the
request with ``logprobs`` is asked again without, and its answers are compared by the
tokens of their text.
"""

from __future__ import annotations

from typing import Any

import httpx
from tokenizers import Tokenizer

from tuner.core import EndpointError
from tuner.loadgen import Api
from tuner.metrics import GreedyAnswer

PROMPTS = (
    "The capital of France is",
    "Write a Python function that returns the reverse of a string.",
    "Explain in two sentences why the sky is blue.",
    "List three prime numbers greater than ten:",
    "Translate into German: Good morning, how are you?",
    "Summarise the plot of Romeo and Juliet in one sentence.",
    "What is 17 multiplied by 23? Think step by step.",
    "Once upon a time, in a small village by the sea,",
)
"""Short, varied prompts (facts, code, reasoning, translation, story): the same for every
configuration of every study, so answers recorded once are the reference."""


def greedy_body(prompt: str, *, model: str, api: Api, max_tokens: int, logprobs: bool
                ) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0,
                            "stream": False}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
        if logprobs:
            body["logprobs"] = True
    else:
        body["prompt"] = prompt
        if logprobs:
            body["logprobs"] = 1
    return body


def parse_answer(prompt: str, data: dict[str, Any], api: Api, tokenizer: Tokenizer
                 ) -> GreedyAnswer:
    """The answer in a (non-streamed) completion; KeyError/TypeError/IndexError when the
    response is not one."""
    choice = data["choices"][0]
    text = (choice["message"].get("content") if api == "chat" else choice["text"]) or ""
    tokens: list[str] | None = None
    logprobs: list[float] | None = None
    lp = choice.get("logprobs")
    if isinstance(lp, dict):
        if isinstance(lp.get("content"), list):  # chat; llama-server's completions too
            tokens = [str(t["token"]) for t in lp["content"]]
            values = [t.get("logprob") for t in lp["content"]]
        elif isinstance(lp.get("tokens"), list):
            tokens = [str(t) for t in lp["tokens"]]
            values = list(lp.get("token_logprobs") or [])
        else:
            values = []
        if tokens is not None and len(values) == len(tokens) and all(
                isinstance(v, int | float) for v in values):
            logprobs = [float(v) for v in values]
    return GreedyAnswer(prompt=prompt, text=text,
                        text_tokens=tokenizer.encode(text, add_special_tokens=False).ids,
                        tokens=tokens, logprobs=logprobs)


async def greedy_answers(url: str, model: str, api: Api, tokenizer: Tokenizer, *,
                         max_tokens: int, timeout_s: float,
                         prompts: tuple[str, ...] = PROMPTS,
                         transport: httpx.AsyncBaseTransport | None = None
                         ) -> list[GreedyAnswer]:
    """The engine at ``url``'s greedy answers to ``prompts``, in order. Raises EndpointError
    when it does not answer one. ``transport``: httpx's own (default) or a test's."""
    path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
    with_logprobs = True
    answers: list[GreedyAnswer] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=5.0),
                                 transport=transport) as http:
        for prompt in prompts:
            try:
                resp = await http.post(url + path, json=greedy_body(
                    prompt, model=model, api=api, max_tokens=max_tokens,
                    logprobs=with_logprobs))
                if with_logprobs and resp.status_code in (400, 422):
                    with_logprobs = False  # the engine does not return log-probabilities
                    resp = await http.post(url + path, json=greedy_body(
                        prompt, model=model, api=api, max_tokens=max_tokens, logprobs=False))
            except httpx.HTTPError as exc:
                raise EndpointError(f"{url} did not answer a greedy request "
                                    f"({type(exc).__name__})") from exc
            if resp.status_code != 200:
                raise EndpointError(f"{url} refused a greedy request: HTTP "
                                    f"{resp.status_code}: {resp.text[:200]}")
            try:
                answers.append(parse_answer(prompt, resp.json(), api, tokenizer))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise EndpointError(f"{url} answered a greedy request with something other "
                                    f"than a completion ({type(exc).__name__}: {exc})") from exc
    return answers
