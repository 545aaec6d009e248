"""Trace replay: send times and lengths from a recorded trace, with its prefix structure.

A trace is JSONL, one request a line: ``offset_s`` (or Mooncake's ``timestamp`` in ms),
``input_tokens`` (or ``input_length``), ``output_tokens`` (or ``output_length``) and, as in
the Mooncake traces, optionally ``hash_ids``: the ids of the request's prompt blocks of
``block_tokens`` tokens (512 there). Equal ids replay as equal token blocks, different ids
as different ones (:mod:`tuner.workload.prefix_blocks`).

To fit a trace to a smaller model and machine: ``window`` takes a slice of it in time,
``length_scale`` scales every length in whole blocks (a block becomes
``round(block_tokens * length_scale)`` tokens, so requests that shared k blocks share k
scaled blocks), ``max_input_tokens`` / ``max_output_tokens`` cap lengths after scaling, and
``speedup`` compresses time (below 1 stretches it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tuner.core import StrictModel, describe_validation_error
from tuner.workload.paths import workload_file
from tuner.workload.prefix_blocks import BlockLayout, prefix_reuse_ratio

NS = 1_000_000_000


class TraceEntry(StrictModel):
    offset_s: float = Field(ge=0)
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    hash_ids: tuple[int, ...] = Field(default=(), description="ids of the prompt's blocks")


class TraceWindow(StrictModel):
    """The part of the trace replayed: from ``start_s`` after its first request, for
    ``duration_s`` (default: to its end), in the trace's own time."""

    start_s: float = Field(default=0.0, ge=0)
    duration_s: float | None = Field(default=None, gt=0)


_KEYS = (("offset_s", "timestamp", "in ms"), ("input_tokens", "input_length", None),
         ("output_tokens", "output_length", None))
_NEEDS = ("each line needs offset_s (or timestamp, in ms), input_tokens and output_tokens "
          "(hash_ids: a list of integers)")


def _entry(raw: object) -> TraceEntry:
    """One line's entry; a ValueError naming the key that is missing or wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"a JSON object, not {type(raw).__name__}")
    values: dict[str, object] = {}
    for key, other, note in _KEYS:
        if key not in raw and other not in raw:
            also = f" (or {other}{', ' + note if note else ''})"
            raise ValueError(f"`{key}`{also} missing")
        values[key] = raw[key] if key in raw else raw[other]
    if "offset_s" not in raw:
        stamp = values["offset_s"]
        values["offset_s"] = stamp / 1000.0 if isinstance(stamp, int | float) else stamp
    values["hash_ids"] = raw.get("hash_ids", ())
    try:
        return TraceEntry.model_validate(values)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, "").removeprefix(": ")) from None


def read_trace(path: Path) -> list[TraceEntry]:
    """The entries of a JSONL trace in time order; a bad line raises one ValueError naming the
    file, the line and the key."""
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(_entry(json.loads(line)))
        except ValueError as exc:  # json's JSONDecodeError is one
            reason = (f"not JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError)
                      else str(exc))
            raise ValueError(f"{path} line {number}: {reason}; {_NEEDS}") from None
    entries.sort(key=lambda e: e.offset_s)
    return entries


class TraceArrivals(StrictModel):
    """Replay a JSONL trace (see the module docstring). The path is relative to the workload."""

    process: Literal["trace"] = "trace"
    file: Path
    speedup: float = Field(default=1.0, gt=0, le=10_000, description="> 1 compresses time, "
                           "< 1 stretches it")
    block_tokens: int = Field(default=512, ge=1, le=1_000_000, description="tokens per "
                              "hash_ids block in the trace (Mooncake: 512)")
    length_scale: float = Field(default=1.0, gt=0, le=1000, description="scale every length, "
                                "in whole blocks so that the sharing structure is kept")
    max_input_tokens: int | None = Field(default=None, ge=1, description="cap after scaling")
    max_output_tokens: int | None = Field(default=None, ge=1, description="cap after scaling")
    window: TraceWindow = TraceWindow()
    _original: tuple[TraceEntry, ...] = PrivateAttr(default=())
    _entries: tuple[TraceEntry, ...] = PrivateAttr(default=())

    @field_validator("file")
    @classmethod
    def _resolve(cls, value: Path, info: ValidationInfo) -> Path:
        return workload_file(value, info, "trace")

    @model_validator(mode="after")
    def _load(self) -> TraceArrivals:
        entries = read_trace(self.file)
        if entries:
            first = entries[0].offset_s + self.window.start_s
            end = None if self.window.duration_s is None else first + self.window.duration_s
            entries = [e for e in entries
                       if e.offset_s >= first and (end is None or e.offset_s < end)]
        if len(entries) < 2:
            raise ValueError(f"{self.file} needs at least two entries (in its window)")
        self._original = tuple(entries)
        self._entries = tuple(self._fitted(e) for e in entries)
        return self

    @property
    def scaled_block_tokens(self) -> int:
        """Tokens of one replayed block."""
        return max(1, round(self.block_tokens * self.length_scale))

    def _fitted(self, entry: TraceEntry) -> TraceEntry:
        full, rest = divmod(entry.input_tokens, self.block_tokens)
        scaled = self.scaled_block_tokens
        # a partial last block keeps at least one token, so a request keeps its blocks
        tokens = full * scaled + (max(1, round(rest * scaled / self.block_tokens)) if rest else 0)
        output = round(entry.output_tokens * self.length_scale)
        if self.max_input_tokens is not None:
            tokens = min(tokens, self.max_input_tokens)
        if self.max_output_tokens is not None:
            output = min(output, self.max_output_tokens)
        return entry.model_copy(update={"input_tokens": max(1, tokens),
                                        "output_tokens": max(1, output)})

    @property
    def entries(self) -> tuple[TraceEntry, ...]:
        """The replayed entries: windowed, scaled and capped."""
        return self._entries

    def layout(self, entry: TraceEntry) -> BlockLayout:
        """A replayed entry's prompt blocks."""
        return BlockLayout(entry.hash_ids, self.scaled_block_tokens, entry.input_tokens)

    def reuse_ratios(self) -> tuple[float, float]:
        """The prefix-reuse ratio of the trace (its window, original lengths) and of the replay
        (scaled and capped); equal when lengths are neither scaled nor capped."""
        trace = prefix_reuse_ratio(BlockLayout(e.hash_ids, self.block_tokens, e.input_tokens)
                                   for e in self._original)
        return trace, prefix_reuse_ratio(self.layout(e) for e in self._entries)

    @property
    def closed_loop(self) -> bool:
        return False

    @property
    def unit(self) -> str:
        """What ``load`` counts."""
        return "req/s"

    @property
    def load(self) -> float:
        span = self._entries[-1].offset_s - self._entries[0].offset_s
        return (len(self._entries) - 1) / span * self.speedup if span > 0 else float("inf")

    def with_load(self, load: float) -> TraceArrivals:
        copy = self.model_copy(update={"speedup": self.speedup * load / self.load})
        copy._original, copy._entries = self._original, self._entries
        return copy

    def offsets_ns(
        self, rng: np.random.Generator, count: int | None, duration_s: float | None
    ) -> np.ndarray:
        start = self._entries[0].offset_s
        times = np.array([(e.offset_s - start) / self.speedup for e in self._entries])
        if duration_s is not None:
            times = times[times < duration_s]
        if count is not None:
            times = times[:count]
        offsets: np.ndarray = np.rint(times * NS).astype(np.int64)
        return offsets
