"""How far a configuration's greedy answers agree with the reference's (pure computation).

Two answers to one prompt, both decoded greedily, agree up to their first differing token;
after it they are different texts, so what follows is not compared. An answer's agreement is
the length of the common prefix over the length of the longer answer (one that stops early,
or runs on, differs there); the configuration's token agreement is the mean over prompts.
Where both engines returned each token's log-probability, their mean absolute difference over
the tokens before the first difference says how close the two distributions stayed while the
answers were still the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field


class GreedyAnswer(BaseModel):
    """An engine's greedy answer to one prompt."""

    prompt: str
    text: str
    text_tokens: list[int] = Field(description="the text's token ids under the served "
                                   "model's tokenizer")
    tokens: list[str] | None = Field(default=None, description="the tokens the engine "
                                     "generated, where it returned them (with log-probabilities)")
    logprobs: list[float] | None = Field(default=None, description="each generated token's "
                                         "log-probability, where the engine returned them")


class Agreement(BaseModel):
    """Answers compared prompt by prompt with the reference's."""

    token_agreement: float = Field(description="mean over prompts of common prefix / longer "
                                   "answer, in tokens")
    identical: int = Field(description="prompts answered with the very same tokens")
    prompts: int
    first_divergence: list[int | None] = Field(description="per prompt, the index of the "
                                               "first token that differs (None: none does)")
    logprob_mean_abs_diff: float | None = Field(default=None, description="mean |difference| "
                                                "of the log-probabilities of the tokens before "
                                                "the first difference (None: not returned, "
                                                "or none before it)")
    compared: str = Field(description="`engine tokens`, or `text tokens` when an engine "
                          "returned none")


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def agreement(reference: Sequence[GreedyAnswer], candidate: Sequence[GreedyAnswer]
              ) -> Agreement:
    """Compare ``candidate``'s answers with ``reference``'s, prompt by prompt (the same
    prompts, in the same order)."""
    if len(reference) != len(candidate) or not reference:
        raise ValueError(f"answers to compare must pair up, got {len(reference)} reference "
                         f"and {len(candidate)} candidate answers")
    engine = all(a.tokens is not None for a in (*reference, *candidate))
    shares: list[float] = []
    divergence: list[int | None] = []
    gaps: list[float] = []
    for ref, cand in zip(reference, candidate, strict=True):
        if ref.prompt != cand.prompt:
            raise ValueError(f"answers to different prompts: {ref.prompt!r}, {cand.prompt!r}")
        a: Sequence[object] = (ref.tokens or []) if engine else ref.text_tokens
        b: Sequence[object] = (cand.tokens or []) if engine else cand.text_tokens
        same = common_prefix(a, b)
        longer = max(len(a), len(b))
        shares.append(1.0 if longer == 0 else same / longer)
        divergence.append(None if same == longer else same)
        if engine and ref.logprobs is not None and cand.logprobs is not None:
            gaps.extend(abs(x - y) for x, y in zip(ref.logprobs[:same], cand.logprobs[:same],
                                                   strict=False))
    return Agreement(token_agreement=sum(shares) / len(shares),
                     identical=sum(d is None for d in divergence), prompts=len(shares),
                     first_divergence=divergence,
                     logprob_mean_abs_diff=sum(gaps) / len(gaps) if gaps else None,
                     compared="engine tokens" if engine else "text tokens")


class QualityVerdict(BaseModel):
    """The check of a configuration that changed lossy knobs: its answers against the
    reference's, and whether they agree enough for it to win."""

    lossy: dict[str, Any] = Field(description="the lossy knobs it set away from their defaults")
    min_token_agreement: float
    agreement: Agreement | None = Field(default=None, description="None: not compared (the "
                                        "detail says why); the configuration cannot win")
    reference_trial: int | None = Field(default=None, description="the trial whose answers "
                                        "are the reference (the defaults')")
    seconds: float = 0.0
    detail: str = ""
    answers_path: str | None = Field(default=None, description="the prompts with both "
                                     "answers and the figures (JSON)")

    @property
    def passed(self) -> bool:
        return (self.agreement is not None
                and self.agreement.token_agreement >= self.min_token_agreement)

    def line(self) -> str:
        """Why it failed, or how well it agreed, in one line."""
        knobs = ", ".join(f"{k}={v}" for k, v in self.lossy.items())
        if self.agreement is None:
            return f"{knobs}: answers not compared with the defaults' ({self.detail})"
        a = self.agreement
        return (f"{knobs}: token agreement {a.token_agreement:.3f} with the defaults' greedy "
                f"answers (least {self.min_token_agreement:g}), {a.identical} of {a.prompts} "
                "identical")
