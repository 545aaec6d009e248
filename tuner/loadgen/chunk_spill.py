"""A run's finished chunks on disk, so a long run's memory stays flat.

Packed (``packed_chunks.py``), a request of 128 streamed chunks still keeps about 0.7 KB of
gaps and counts, and a 30-minute run at 20 req/s ends 36,000 of them. Nothing reads a
finished request's chunks until the run's figures are made, so as each request ends its
packed gaps and counts are appended to an unlinked temporary file, and its record keeps a
view of them (``StoredTimes``, ``StoredCounts``) that reads them back when asked. A runner
keeps one file for all its runs (a capacity search's steps: one open file, not one a step);
the file goes when the runner and the last record that points into it do.

Chunks that cannot be written (a full disk, no temporary directory) stay in memory, as they
were: nothing measured is lost. A run of one-token counts is already one shared object and
stays where it is, as do chunks smaller than the view that would replace them.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

from tuner.loadgen.packed_chunks import PackedTimes, StoredCounts, StoredTimes
from tuner.loadgen.progress import RunProgress
from tuner.loadgen.records import RequestRecord

SMALLEST = 64
"""Bytes of gaps or counts below which a view would cost more than it saves."""


class ChunkSpill:
    """An append-only file of finished records' packed chunks (created at the first write).
    One writer: the event loop that ends the requests (a worker pool hands its records to
    it); reads may come from any thread."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self.failed: str | None = None
        """Why chunks stopped going to disk (they stay in memory from then on), or None."""

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._end

    def keep(self, rec: RequestRecord) -> None:
        """Move a finished, sealed record's packed gaps and counts to the file."""
        times, counts = rec.chunk_ns, rec.chunk_tokens
        if isinstance(times, PackedTimes):
            first, gaps = times.packed()
            if len(gaps) >= SMALLEST and (at := self._write(gaps)) is not None:
                rec.chunk_ns = StoredTimes(first, self, at, len(gaps) // 4)
        if (isinstance(counts, bytes) and len(counts) >= SMALLEST
                and counts.count(1) != len(counts)  # a run of ones is one shared object
                and (at := self._write(counts)) is not None):
            rec.chunk_tokens = StoredCounts(self, at, len(counts))

    def read(self, at: int, size: int) -> bytes:
        assert self._file is not None
        data = os.pread(self._file.fileno(), size, at)
        if len(data) != size:
            raise OSError(f"chunk spill: read {len(data)} of {size} bytes at {at}")
        return data

    def _write(self, data: bytes) -> int | None:
        if self.failed is not None:
            return None
        try:
            if self._file is None:
                # open as long as the spill is: its views read it until the last one goes
                self._file = tempfile.TemporaryFile(prefix="tuner-chunks-")  # noqa: SIM115
            if os.pwrite(self._file.fileno(), data, self._end) != len(data):
                raise OSError("short write")
        except OSError as exc:
            self.failed = f"{type(exc).__name__}: {exc}"
            return None
        at, self._end = self._end, self._end + len(data)
        return at


class SpillingProgress:
    """A run's progress hooks that also move each record's chunks to the spill as it ends
    (the hooks see it first, while its chunks are still in memory)."""

    def __init__(self, shown: RunProgress, spill: ChunkSpill) -> None:
        self._shown, self._spill = shown, spill

    def request_sent(self, rec: RequestRecord) -> None:
        self._shown.request_sent(rec)

    def request_done(self, rec: RequestRecord) -> None:
        self._shown.request_done(rec)
        self._spill.keep(rec)

    def finished(self) -> None:
        self._shown.finished()
