"""Per-request records: what happened to each request, on one clock.

Times are nanoseconds from the start of the run (``time.perf_counter_ns``).
A failed request is a record with ``error`` set, never an exception.

The records CSV (``tune bench --json out.json`` writes ``out.records.csv``) has one row per
request sent, in this order:

- ``index``: the request's number in its run's plan; ``class_name``, ``prefix_group`` (the
  shared prefix it carries, empty: none); ``input_tokens`` and ``planned_output_tokens``: its
  plan (prompt tokens with any prefix; output tokens forced where the server accepts it);
- ``scheduled_ns``, ``sent_ns``, ``first_token_ns``, ``done_ns``: planned send, actual send,
  first token and end, from the run's start; ``chunk_ns`` and ``chunk_tokens``: JSON lists,
  each streamed chunk's arrival and tokens;
- ``prompt_tokens``, ``output_tokens``: the server's ``usage`` counts (empty: not reported);
- ``status``: the HTTP status the server answered, or 499 when the tuner itself ended the
  request (cancelled by an early stop or an interrupt, or past ``request_timeout_s``), so a
  row never reads as a success it was not; ``error``: empty for a request that succeeded,
  else what went wrong;
- ``warmup``: sent but left out of every figure; ``step``: the run's epoch (a capacity step);
  ``mismatch``: how the served request differed from its plan (empty: it did not).
"""

from __future__ import annotations

import csv
import json
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import numpy.typing as npt

from tuner.host import atomic_open
from tuner.loadgen.packed_chunks import (
    count_array,
    gap_array,
    one_byte_each,
    packed_counts,
    packed_times,
)

ENDED_BY_CLIENT = 499
"""``status`` of a request the tuner ended itself (as nginx logs a client that closed)."""


def chunk_times(values: list[int] | None = None) -> array[int]:
    """A record's chunk arrival times: 8 bytes each in one block, not a Python int each (a
    long run keeps every record until its figures are made)."""
    return array("q", values or ())


def chunk_counts(values: list[int] | None = None) -> array[int]:
    """A record's tokens per chunk: one byte each while every count is from 0 to 255 (a
    streamed chunk mostly carries one token), 8 bytes each otherwise."""
    values = values or []
    return array("B" if one_byte_each(values) else "q", values)


@dataclass(slots=True)
class RequestRecord:
    index: int
    class_name: str
    prefix_group: int | None
    input_tokens: int
    planned_output_tokens: int
    scheduled_ns: int
    sent_ns: int = 0
    first_token_ns: int | None = None
    done_ns: int | None = None
    chunk_ns: Sequence[int] = field(default_factory=chunk_times)
    chunk_tokens: Sequence[int] = field(default_factory=chunk_counts)
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    status: int | None = None
    error: str | None = None
    warmup: bool = False
    step: int = 0
    mismatch: str | None = None
    """How the served request differed from its plan (prompt or forced output length)."""

    def add_chunk(self, at_ns: int, tokens: int) -> None:
        """A chunk arrived at ``at_ns`` with ``tokens`` tokens."""
        times, counts = self.chunk_ns, self.chunk_tokens
        if not isinstance(times, array) or not isinstance(counts, array):  # sealed, or lists
            times = self.chunk_ns = chunk_times(list(times))
            counts = self.chunk_tokens = chunk_counts(list(counts))
        times.append(at_ns)
        try:
            counts.append(tokens)
        except OverflowError:  # not a byte's worth: widen this record's counts once
            self.chunk_tokens = array("q", [*counts, tokens])

    def seal(self) -> None:
        """The request is over: keep its chunk times and counts packed (packed_chunks.py), a
        little over half their size while they grew."""
        self.chunk_ns = packed_times(self.chunk_ns, self.first_token_ns)
        self.chunk_tokens = packed_counts(self.chunk_tokens)

    @property
    def ok(self) -> bool:
        return self.error is None and self.done_ns is not None

    @property
    def ttft_ns(self) -> int | None:
        return None if self.first_token_ns is None else self.first_token_ns - self.sent_ns

    @property
    def e2e_ns(self) -> int | None:
        return None if self.done_ns is None else self.done_ns - self.sent_ns

    @property
    def generated(self) -> int:
        """Output tokens: the server's ``usage`` count, else the tokens seen in chunks."""
        return self.output_tokens if self.output_tokens is not None else sum(self.chunk_tokens)

    def itl_ns(self) -> npt.NDArray[np.float64]:
        """Inter-token gaps. A chunk that carries k tokens after a gap g gives k gaps of g/k
        (each the same float as ``(at - before) / k`` in Python: both exact, one division)."""
        gaps = gap_array(self.chunk_ns)
        counts = count_array(self.chunk_tokens)[1:len(gaps) + 1]
        k = np.maximum(counts, 1)
        return np.repeat(gaps[:len(k)].astype(np.float64) / k, k)

    def tpot_ns(self) -> float | None:
        """(e2e - ttft) / (output tokens - 1), as vLLM's benchmark defines it."""
        if not self.ok or self.ttft_ns is None or self.generated < 2:
            return None
        return (self.e2e_ns - self.ttft_ns) / (self.generated - 1)  # type: ignore[operator]  # ok implies done_ns


_LIST_FIELDS = {"chunk_ns", "chunk_tokens"}


def write_records_csv(records: list[RequestRecord], path: Path) -> None:
    """One row per request; chunk lists are JSON arrays in their cells."""
    names = [f.name for f in fields(RequestRecord)]
    with atomic_open(path, newline="") as fh:  # whole or not at all (a full disk, a kill)
        writer = csv.writer(fh)
        writer.writerow(names)
        for rec in records:
            row = []
            for name in names:
                value = getattr(rec, name)
                row.append(json.dumps(list(value)) if name in _LIST_FIELDS else
                           "" if value is None else value)
            writer.writerow(row)


def read_records_csv(path: Path) -> list[RequestRecord]:
    """Inverse of :func:`write_records_csv`."""
    out = []
    kinds = {f.name: f.type for f in fields(RequestRecord)}
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            kwargs: dict[str, object] = {}
            for name, text in row.items():
                kind = str(kinds[name])
                if name == "chunk_ns":
                    kwargs[name] = chunk_times(json.loads(text))
                elif name == "chunk_tokens":
                    kwargs[name] = chunk_counts(json.loads(text))
                elif text == "":
                    kwargs[name] = None
                elif kind.startswith("int"):
                    kwargs[name] = int(text)
                elif kind == "bool":
                    kwargs[name] = text == "True"
                else:
                    kwargs[name] = text
            rec = RequestRecord(**kwargs)  # type: ignore[arg-type]  # built from the field list
            rec.seal()
            out.append(rec)
    return out
