"""Token agreement of greedy answers: up to the first difference, over the longer answer."""

from __future__ import annotations

import pytest

from tuner.metrics.token_agreement import GreedyAnswer, QualityVerdict, agreement


def answer(prompt: str, tokens: list[str] | None, ids: list[int] | None = None,
           logprobs: list[float] | None = None) -> GreedyAnswer:
    return GreedyAnswer(prompt=prompt, text="".join(tokens or []),
                        text_tokens=ids if ids is not None else list(range(len(tokens or []))),
                        tokens=tokens, logprobs=logprobs)


def test_identical_answers_agree_fully() -> None:
    ref = [answer("p", ["a", "b", "c"]), answer("q", ["x"])]
    found = agreement(ref, ref)
    assert found.token_agreement == 1.0
    assert (found.identical, found.prompts) == (2, 2)
    assert found.first_divergence == [None, None]
    assert found.compared == "engine tokens"


def test_agreement_stops_at_the_first_difference() -> None:
    ref = [answer("p", ["a", "b", "c", "d"]), answer("q", ["a", "b", "c", "d"])]
    cand = [answer("p", ["a", "b", "x", "d"]), answer("q", ["a", "b", "c", "d"])]
    found = agreement(ref, cand)
    # 2 of 4 tokens before the difference (the 4th, equal again, does not count), and 4 of 4
    assert found.token_agreement == pytest.approx((0.5 + 1.0) / 2)
    assert found.first_divergence == [2, None]
    assert found.identical == 1


def test_an_answer_that_stops_early_or_runs_on_differs_there() -> None:
    ref = [answer("p", ["a", "b", "c", "d"]), answer("q", ["a", "b"])]
    cand = [answer("p", ["a", "b"]), answer("q", ["a", "b", "c", "d"])]
    found = agreement(ref, cand)
    assert found.token_agreement == pytest.approx(0.5)
    assert found.first_divergence == [2, 2]


def test_without_engine_tokens_the_texts_tokens_are_compared() -> None:
    ref = [answer("p", ["a", "b"], ids=[1, 2, 3])]
    cand = [answer("p", None, ids=[1, 9, 3])]
    found = agreement(ref, cand)
    assert found.compared == "text tokens"
    assert found.token_agreement == pytest.approx(1 / 3)


def test_log_probabilities_are_compared_before_the_first_difference() -> None:
    ref = [answer("p", ["a", "b", "c"], logprobs=[-0.1, -0.2, -0.3])]
    cand = [answer("p", ["a", "b", "x"], logprobs=[-0.2, -0.4, -5.0])]
    assert agreement(ref, cand).logprob_mean_abs_diff == pytest.approx((0.1 + 0.2) / 2)
    no_lp = [answer("p", ["a", "b", "x"])]
    assert agreement(ref, no_lp).logprob_mean_abs_diff is None


def test_answers_must_pair_up() -> None:
    with pytest.raises(ValueError, match="pair up"):
        agreement([answer("p", ["a"])], [])
    with pytest.raises(ValueError, match="different prompts"):
        agreement([answer("p", ["a"])], [answer("q", ["a"])])


def test_a_verdict_passes_at_the_least_agreement_and_not_below() -> None:
    ref = [answer("p", ["a", "b", "c", "d"])]
    half = agreement(ref, [answer("p", ["a", "b", "x", "y"])])
    assert QualityVerdict(lossy={"kv_cache_dtype": "fp8"}, min_token_agreement=0.5,
                          agreement=half).passed
    failed = QualityVerdict(lossy={"kv_cache_dtype": "fp8"}, min_token_agreement=0.95,
                            agreement=half)
    assert not failed.passed
    assert "kv_cache_dtype=fp8: token agreement 0.500" in failed.line()
    unchecked = QualityVerdict(lossy={"quantization": "Q4_0"}, min_token_agreement=0.0,
                               detail="no reference")
    assert not unchecked.passed  # not compared: it cannot win, whatever the least agreement
    assert "not compared" in unchecked.line()
