"""The share of a run's prompts its own earlier prompts explain to a prefix cache."""

from __future__ import annotations

from tuner.workload.prefix_share import own_prefix_share


def test_a_repeated_prompt_is_shared_and_a_new_one_is_not() -> None:
    a, b = "x" * 640, "y" * 640
    assert own_prefix_share([a, b]) == 0.0
    assert own_prefix_share([a, a]) == 0.5  # the second is all blocks seen before
    # A shared prefix counts up to where the prompts part (whole blocks only).
    c = "x" * 320 + "z" * 320
    assert own_prefix_share([a, c]) == 320 / 1280


def test_sharing_is_a_chain_from_the_start() -> None:
    """A block seen before after a block that was not is not a cache hit."""
    a = "x" * 64 + "y" * 64
    b = "z" * 64 + "y" * 64
    assert own_prefix_share([a, b]) == 0.0
