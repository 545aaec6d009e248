"""Prompts with exact token counts for the served model's tokenizer.

The text is a sequence of vocabulary words that are each one token with a
leading space (" word"); a byte-level pre-tokenizer splits on those spaces, so
n words are n tokens and counts add up across a shared prefix and its suffix.
Every prompt is re-encoded and corrected until its count is exact, so other
tokenizers work too as long as some words round-trip.
"""

from __future__ import annotations

import re

import numpy as np
from tokenizers import Tokenizer

from tuner.core import ConfigError

_WORD = re.compile(r" [A-Za-z]{2,16}")


class PromptSynth:
    """Builds prompt text of an exact token length from one tokenizer."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tok = tokenizer
        vocab = sorted(tokenizer.get_vocab().values())
        texts = [tokenizer.decode([i]) for i in vocab]
        candidates = [t for t in texts if _WORD.fullmatch(t)]
        singles = tokenizer.encode_batch(candidates, add_special_tokens=False)
        doubles = tokenizer.encode_batch([t + t for t in candidates], add_special_tokens=False)
        self._pool = np.array(
            [t for t, one, two in zip(candidates, singles, doubles, strict=True)
             if len(one.ids) == 1 and len(two.ids) == 2],
            dtype=object,
        )
        if len(self._pool) < 16:
            raise ConfigError("the tokenizer has too few single-token words to build prompts of "
                              "exact length; use a byte-level BPE tokenizer")
        self.special_tokens = len(tokenizer.encode("", add_special_tokens=True).ids)

    def count(self, text: str, *, specials: bool = True) -> int:
        """Tokens the server will count for ``text`` (with BOS and the like when ``specials``)."""
        return len(self._tok.encode(text, add_special_tokens=specials).ids)

    def words(self, rng: np.random.Generator, n: int) -> str:
        """``n`` random single-token words, concatenated."""
        return "".join(self.word_list(rng, n))

    def word_list(self, rng: np.random.Generator, n: int) -> tuple[str, ...]:
        """``n`` random single-token words; any leading slice of them, joined, has as many
        tokens as words."""
        if n <= 0:
            return ()
        return tuple(self._pool[rng.integers(0, len(self._pool), size=n)])

    def prompt(
        self, rng: np.random.Generator, tokens: int, *, prefix: str = "", specials: bool = True
    ) -> str:
        """``prefix`` followed by words so that the whole has exactly ``tokens`` tokens."""
        text = prefix + self.words(rng, tokens - self.count(prefix, specials=specials))
        for _ in range(16):
            diff = tokens - self.count(text, specials=specials)
            if diff == 0:
                return text
            if diff > 0:
                text += self.words(rng, diff)
            else:
                cut = text.rsplit(" ", -diff)[0]
                if len(cut) <= len(prefix):
                    break
                text = cut
        raise ConfigError(f"cannot build a prompt of exactly {tokens} tokens with this "
                          "tokenizer; choose a byte-level BPE tokenizer")
