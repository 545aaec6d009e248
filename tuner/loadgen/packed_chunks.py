"""A finished request's chunk times and token counts in their smallest exact form.

A long run keeps every request's record until its figures are made, and the chunk times are
most of a record: 128 streamed tokens are 1 KB as 8-byte times in an array grown by appends.
Once the request is over its times never change, so they are packed: the first time, then
each gap from the one before as an unsigned 4-byte count of nanoseconds, in one ``bytes``
(exact while every gap is under 4.29 s; a record with a longer gap, or times out of order,
keeps 8-byte times). Token counts become a ``bytes`` of one count each while all are
0-255, and a stream of one token a chunk (the usual case) shares one object per length.

A run that keeps many records moves each one's packed gaps and counts to a store as it ends
(``chunk_spill.py``): ``StoredTimes`` and ``StoredCounts`` read them back when asked. Every
form is a ``Sequence[int]`` equal to the values it holds, and pickles as packed bytes.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import accumulate, islice
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt

GAP_LIMIT = 0xFFFF_FFFF
"""The longest gap (ns) a packed record holds: 4.29 s."""


class SameValues(Sequence[int]):
    """A sealed form's equality: equal to any sequence of the same values."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists and arrays, which are not hashable


class Store(Protocol):
    """Where finished chunks are kept out of memory (``chunk_spill.ChunkSpill``)."""

    def read(self, at: int, size: int) -> bytes:
        """The ``size`` bytes written at offset ``at``."""


class GapTimes(SameValues):
    """Chunk times (ns) kept as the first and the gaps after it."""

    __slots__ = ("_first",)

    def __init__(self, first: int) -> None:
        self._first = first

    def gaps(self) -> memoryview:
        """Each time minus the one before (ns), as unsigned 32-bit integers."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.gaps()) + 1

    def __iter__(self) -> Iterator[int]:
        return accumulate(self.gaps(), initial=self._first)

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)})"

    def __reduce__(self) -> tuple[type[PackedTimes], tuple[int, bytes]]:
        return PackedTimes, (self._first, self.gaps().tobytes())


class PackedTimes(GapTimes):
    """Chunk times with their gaps in memory, 4 bytes each."""

    __slots__ = ("_gaps",)

    def __init__(self, first: int, gaps: bytes) -> None:
        super().__init__(first)
        self._gaps = gaps

    def gaps(self) -> memoryview:
        return memoryview(self._gaps).cast("I")

    def packed(self) -> tuple[int, bytes]:
        """The first time and the gaps' bytes."""
        return self._first, self._gaps


class StoredTimes(GapTimes):
    """Chunk times with their gaps in a store: read when asked, never held."""

    __slots__ = ("_store", "_at", "_n")

    def __init__(self, first: int, store: Store, at: int, n: int) -> None:
        super().__init__(first)
        self._store, self._at, self._n = store, at, n

    def gaps(self) -> memoryview:
        return memoryview(self._store.read(self._at, 4 * self._n)).cast("I")

    def __len__(self) -> int:
        return self._n + 1


class StoredCounts(SameValues):
    """Token counts of one byte each in a store: read when asked, never held."""

    __slots__ = ("_store", "_at", "_n")

    def __init__(self, store: Store, at: int, n: int) -> None:
        self._store, self._at, self._n = store, at, n

    def counts(self) -> bytes:
        return self._store.read(self._at, self._n)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        return iter(self.counts())

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> bytes: ...

    def __getitem__(self, i: int | slice) -> int | bytes:
        return self.counts()[i]

    def __repr__(self) -> str:
        return f"StoredCounts({list(self)})"

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:
        return bytes, (self.counts(),)


def packed_times(times: Sequence[int], first: int | None = None) -> Sequence[int]:
    """``times`` in the smallest exact form. ``first``, when equal to the first time, is kept
    as given (it is the record's first-token time: one object, not two)."""
    if isinstance(times, GapTimes):
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
    if isinstance(counts, StoredCounts):
        return counts
    if isinstance(counts, bytes):
        packed = counts
    elif isinstance(counts, array) and counts.typecode == "B":
        packed = counts.tobytes()
    elif one_byte_each(counts):
        packed = bytes(counts)
    else:
        return counts
    return _ones(len(packed)) if packed.count(1) == len(packed) else packed


def gap_array(times: Sequence[int]) -> npt.NDArray[np.int64] | npt.NDArray[np.uint32]:
    """Each time minus the one before, in one array (no Python int per gap)."""
    if isinstance(times, GapTimes):
        return np.frombuffer(times.gaps(), dtype=np.uint32)
    if len(times) < 2:
        return np.empty(0, dtype=np.int64)
    if isinstance(times, array) and times.typecode == "q":
        return np.diff(np.frombuffer(times, dtype=np.int64))
    return np.diff(np.asarray(times, dtype=np.int64))


def count_array(counts: Sequence[int]) -> npt.NDArray[np.integer[Any]]:
    """Token counts in one array."""
    if isinstance(counts, StoredCounts):
        counts = counts.counts()
    if isinstance(counts, bytes) or (isinstance(counts, array) and counts.typecode == "B"):
        return np.frombuffer(counts, dtype=np.uint8)
    if isinstance(counts, array) and counts.typecode == "q":
        return np.frombuffer(counts, dtype=np.int64)
    return np.asarray(counts, dtype=np.int64)
