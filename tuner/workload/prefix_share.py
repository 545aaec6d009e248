"""How much of a run's prompts its own earlier prompts explain to a prefix cache.

An engine's prefix cache hits a request's leading blocks that an earlier request had, block
by block in a chain (vLLM hashes each block with the one before). Over a run's prompts in send
order, the share of prompt text whose chain of blocks was seen before is the hit rate an
unbounded cache would have from the run alone. A server that hits more holds prompts from
before the run (an earlier run of the same workload and epoch).
"""

from __future__ import annotations

from collections.abc import Iterable

BLOCK_CHARS = 64
"""Characters per block: about 16 tokens of the synthetic prompts, vLLM's block size."""


def own_prefix_share(prompts: Iterable[str], block_chars: int = BLOCK_CHARS) -> float:
    """Σ characters in leading blocks seen before / Σ characters, over ``prompts`` in order
    (a prompt's last partial block is never counted as shared)."""
    seen: set[int] = set()
    reused = total = 0
    for prompt in prompts:
        total += len(prompt)
        chain, chained = 0, True
        for start in range(0, len(prompt) - block_chars + 1, block_chars):
            chain = hash((chain, prompt[start:start + block_chars]))
            if chained and chain in seen:
                reused += block_chars
            else:
                chained = False
                seen.add(chain)
    return reused / total if total else 0.0
