"""The tokenizer's training text, made or found on this machine (no hub here).

``synthetic``: lines of seeded pseudo-words with Zipf-like frequencies (the tiny model's).
``packages``: the Python standard library's own sources, which ship with every Python: code,
comments and English docstrings, in a fixed order, up to a size. Its text depends on the
Python version, which the model folder records.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import numpy as np

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "ba", "do", "fi", "gu", "ha",
              "je", "pu", "qi", "wy", "xo", "an", "el", "in", "or", "us", "st", "tr", "pl", "gr")
PACKAGES_BYTES = 24 * 2**20
"""How much of the standard library's text a ``packages`` tokenizer is trained on."""


def synthetic_corpus(seed: int, words: int = 200_000) -> list[str]:
    """Lines of pseudo-words with Zipf-like frequencies: a deterministic training corpus."""
    rng = np.random.default_rng(seed)
    lexicon = sorted({"".join(rng.choice(_SYLLABLES, size=rng.integers(1, 4)))
                      for _ in range(6000)})
    ranks = np.arange(1, len(lexicon) + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.05
    picks = rng.choice(len(lexicon), size=words, p=weights / weights.sum())
    line_words = 24
    return [" ".join(lexicon[i] for i in picks[j:j + line_words])
            for j in range(0, words, line_words)]


def package_files() -> list[Path]:
    """The standard library's ``.py`` files, in a fixed order (its tests left out)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py")
                  if "site-packages" not in p.parts and "test" not in p.parts
                  and "tests" not in p.parts)


def package_corpus(max_bytes: int = PACKAGES_BYTES) -> Iterator[str]:
    """The standard library's sources, file by file, until ``max_bytes``."""
    left = max_bytes
    for path in package_files():
        if left <= 0:
            return
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        left -= len(text.encode())
        yield text


def python_version() -> str:
    """The Python whose standard library a ``packages`` corpus came from."""
    return ".".join(str(v) for v in sys.version_info[:3])
