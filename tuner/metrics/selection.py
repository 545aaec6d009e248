"""Order statistics of more values than are worth holding at once.

A 30-minute run streams millions of tokens: its ITL gaps as one float64 array are tens of MB,
more than the rest of the run keeps. Their percentiles need a few order statistics only, so
the values are read in blocks, as many times as needed (radix selection): each pass counts,
for every rank still open, the values that share its known leading bits of a key that sorts
as the floats do, by their next 16 bits; once a rank's range holds few enough values, the
next pass keeps and sorts them. The figures are exact: the values numpy would pick from the
whole array, interpolated as numpy's ``percentile`` does (its default, linear method).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

Blocks = Callable[[], Iterator[npt.NDArray[np.float64]]]
"""Yields the same values, in blocks, each time it is called."""

DIGIT = 16
SIGN = np.uint64(1 << 63)


def sort_keys(values: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    """Unsigned keys in the floats' order (flip a negative's bits, set a positive's sign)."""
    bits = values.view(np.uint64)
    return np.where(bits & SIGN, ~bits, bits | SIGN)


def from_key(key: int) -> float:
    """The float a sort key stands for."""
    k = np.array([key], dtype=np.uint64)
    bits = k ^ SIGN if key >> 63 else ~k
    return float(bits.view(np.float64)[0])


@dataclass(frozen=True)
class _Range:
    """Where a rank's value is known to be: its key's leading ``bits`` are ``prefix``, and
    ``below`` values sort before every key with that prefix; ``count`` share it (None: not
    counted yet)."""

    prefix: int
    bits: int
    below: int
    count: int | None

    def inside(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        if self.bits == 0:
            return keys
        return cast(npt.NDArray[np.uint64],
                    keys[(keys >> np.uint64(64 - self.bits)) == np.uint64(self.prefix)])

    def narrowed(self, counts: npt.NDArray[np.int64], rank: int) -> _Range:
        """The range one digit narrower that holds ``rank``, from its counts by next digit."""
        cum = np.cumsum(counts)
        digit = int(np.searchsorted(cum, rank - self.below, side="right"))
        below = self.below + (int(cum[digit - 1]) if digit else 0)
        return _Range(self.prefix << DIGIT | digit, self.bits + DIGIT, below,
                      int(counts[digit]))


def order_statistics(blocks: Blocks, ranks: Iterable[int], *, hold: int = 1 << 16
                     ) -> dict[int, float]:
    """The values at the 0-based ``ranks`` among all that ``blocks()`` yields, each pass
    keeping at most ``hold`` values per open range."""
    open_ranks = {r: _Range(0, 0, 0, None) for r in set(ranks)}
    found: dict[int, float] = {}
    while open_ranks:
        ranges = set(open_ranks.values())
        counted = {g: np.zeros(1 << DIGIT, dtype=np.int64) for g in ranges
                   if g.count is None or g.count > hold}
        kept: dict[_Range, list[npt.NDArray[np.uint64]]] = {g: [] for g in ranges
                                                              if g not in counted}
        for block in blocks():
            keys = sort_keys(block)
            for g in ranges:
                inside = g.inside(keys)
                if g in counted:
                    digits = (inside >> np.uint64(64 - DIGIT - g.bits)) & np.uint64(0xFFFF)
                    counted[g] += np.bincount(digits.astype(np.intp), minlength=1 << DIGIT)
                else:
                    kept[g].append(inside)
        for rank, g in list(open_ranks.items()):
            if g in kept:
                ordered = np.sort(np.concatenate(kept[g]))
                found[rank] = from_key(int(ordered[rank - g.below]))
                del open_ranks[rank]
                continue
            narrower = g.narrowed(counted[g], rank)
            if narrower.bits == 64:  # every bit known: the key is the value
                found[rank] = from_key(narrower.prefix)
                del open_ranks[rank]
            else:
                open_ranks[rank] = narrower
    return found


def percentile_ranks(n: int, percents: Sequence[float]) -> list[tuple[int, int, float]]:
    """For each percent, numpy's linear method's two 0-based ranks and weight (its virtual
    index ``(n - 1) * q``, ``_get_indexes`` and ``_get_gamma``, step by step)."""
    q = np.true_divide(np.asarray(percents, dtype=np.float64), np.float64(100))
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = following[above] = -1
    below = virtual < 0
    previous[below] = following[below] = 0
    low, high = previous.astype(np.intp), following.astype(np.intp)
    gamma = np.asarray(virtual - low)
    return [(int(a) % n, int(b) % n, float(t)) for a, b, t in zip(low, high, gamma, strict=True)]


def lerp(a: float, b: float, t: float) -> float:
    """numpy's ``_lerp``: from the nearer end, so t = 0 gives a and t = 1 gives b exactly."""
    fa, fb, ft = np.float64(a), np.float64(b), np.float64(t)
    diff = fb - fa
    return float(fb - diff * (1 - ft)) if ft >= 0.5 else float(fa + diff * ft)
