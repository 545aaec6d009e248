"""A finished request's chunk times and token counts in their smallest exact form.

A long run keeps every request's record until its figures are made, and the chunk times are
most of a record: 128 streamed tokens are 1 KB as 8-byte times in an array grown by appends.
Once the request is over its times never change, so they are packed: the first time, then
each gap from the one before as an unsigned 4-byte count of nanoseconds, in one ``bytes``
(exact while every gap is under 4.29 s; a record with a longer gap, or times out of order,
keeps 8-byte times). Token counts become a ``bytes`` of one count each while all are
0-255, and a stream of one token a chunk (the usual case) shares one object per length.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import accumulate, islice
from typing import overload

import numpy as np

GAP_LIMIT = 0xFFFF_FFFF
"""The longest gap (ns) a packed record holds: 4.29 s."""


class PackedTimes(Sequence[int]):
    """Chunk times (ns) kept as the first and the gaps after it."""

    __slots__ = ("_first", "_gaps")

    def __init__(self, first: int, gaps: bytes) -> None:
        self._first, self._gaps = first, gaps

    def __len__(self) -> int:
        return len(self._gaps) // 4 + 1

    def __iter__(self) -> Iterator[int]:
        return accumulate(memoryview(self._gaps).cast("I"), initial=self._first)

    def gaps(self) -> memoryview:
        """Each time minus the one before (ns), as unsigned 32-bit integers."""
        return memoryview(self._gaps).cast("I")

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return list(self)[i]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("chunk time index out of range")
        i %= n
        return self._first + sum(islice(self.gaps(), i)) if i else self._first

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists and arrays, which are not hashable

    def __repr__(self) -> str:
        return f"PackedTimes({list(self)})"

    def __reduce__(self) -> tuple[type[PackedTimes], tuple[int, bytes]]:
        return PackedTimes, (self._first, self._gaps)


def packed_times(times: Sequence[int], first: int | None = None) -> Sequence[int]:
    """``times`` in the smallest exact form. ``first``, when equal to the first time, is kept
    as given (it is the record's first-token time: one object, not two)."""
    if isinstance(times, PackedTimes):
        return times
    wide = times if isinstance(times, array) and times.typecode == "q" else array("q", times)
    if len(wide) < 2:
        return array("q", wide)
    gaps = np.diff(np.frombuffer(wide, dtype=np.int64))
    if gaps.min() < 0 or gaps.max() > GAP_LIMIT:
        return array("q", wide)  # exact size: appends over-allocate
    head = wide[0]
    return PackedTimes(first if first is not None and first == head else head,
                       gaps.astype(np.uint32).tobytes())


def one_byte_each(counts: Sequence[int]) -> bool:
    """Whether every count fits a byte (0-255)."""
    return all(0 <= c < 256 for c in counts)


@lru_cache(maxsize=4096)
def _ones(n: int) -> bytes:
    return b"\x01" * n


def packed_counts(counts: Sequence[int]) -> Sequence[int]:
    """Token counts as bytes while each is 0-255 (one shared object for a run of ones), else as
    they are."""
    if isinstance(counts, bytes):
        packed = counts
    elif isinstance(counts, array) and counts.typecode == "B":
        packed = counts.tobytes()
    elif one_byte_each(counts):
        packed = bytes(counts)
    else:
        return counts
    return _ones(len(packed)) if packed.count(1) == len(packed) else packed
