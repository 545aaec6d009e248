"""Prefix structure of a trace: requests as sequences of shared token blocks.

A Mooncake-format trace gives each request ``hash_ids``, the ids of its blocks of
``block_tokens`` tokens, in prompt order; two requests with the same leading ids share that
prefix. A replay makes equal ids equal token blocks and different ids different ones, so an
engine's prefix cache sees the trace's reuse. The last block of a request may be partial
(its prompt ends inside it); the tokens after its blocks are the request's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BlockLayout:
    """One request's prompt as blocks: ``blocks`` ids of ``block_tokens`` tokens each, covering
    the first ``min(input_tokens, len(blocks) * block_tokens)`` tokens."""

    blocks: tuple[int, ...]
    block_tokens: int
    input_tokens: int

    def block_lengths(self) -> list[int]:
        """Tokens of each block that the prompt holds (the last may be partial; blocks past
        the prompt's end hold none and are left out)."""
        lengths = []
        for j in range(len(self.blocks)):
            held = min(self.block_tokens, self.input_tokens - j * self.block_tokens)
            if held <= 0:
                break
            lengths.append(held)
        return lengths


def prefix_reuse_ratio(layouts: Iterable[BlockLayout]) -> float:
    """Share of all prompt tokens that an unbounded prefix cache would hold when each request
    arrives, in order: Σ reused / Σ input tokens.

    A request's reused tokens are those of its leading blocks already seen in an earlier
    request (as much of each block as was seen), up to the first block that was not; a
    request's own tokens after its blocks are never reused.
    """
    seen: dict[int, int] = {}
    reused = total = 0
    for layout in layouts:
        total += layout.input_tokens
        chained = True
        for block, held in zip(layout.blocks, layout.block_lengths(), strict=False):
            before = seen.get(block, 0)
            if chained:
                reused += min(before, held)
                chained = before >= held
            seen[block] = max(before, held)
    return reused / total if total else 0.0
