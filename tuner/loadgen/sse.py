"""Server-sent events from raw bytes, cheaply: what a network read completed, and the few facts
a figure needs from it without parsing its JSON.

A network read may end in the middle of an event, or hold several; the splitter keeps the
unfinished tail for the next read and hands back the complete events as one block of bytes.
Events end at a blank line (``\\n\\n``, or ``\\r\\n\\r\\n``). :func:`payloads` splits a block into
the ``data:`` payloads of its events (other lines, comments and ``event:``/``id:``, are
skipped); :func:`last_int` finds the last value of a JSON key in a block, which is safe in
bytes because a quote inside a JSON string is always escaped.
"""

from __future__ import annotations

DONE = b"[DONE]"


class SseSplitter:
    """Feed it each read as it arrives; it returns the complete events that read finished."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> bytes:
        """The complete events up to the last blank line (without it); b"" if none ended."""
        data = self._tail + chunk if self._tail else chunk
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        end = data.rfind(b"\n\n")
        if end < 0:
            self._tail = data
            return b""
        self._tail = data[end + 2:]
        return data[:end]

    @property
    def pending(self) -> bytes:
        """What arrived after the last complete event (a stream that ends here was cut)."""
        return self._tail


def payloads(block: bytes) -> list[bytes]:
    """The ``data:`` payloads of a block of complete events, in order."""
    return [line[5:].strip() for event in block.split(b"\n\n") for line in event.split(b"\n")
            if line.startswith(b"data:")]


def ends_with_done(block: bytes) -> bool:
    """Whether the block's last event is ``data: [DONE]`` (it is always the stream's last)."""
    last = block[block.rfind(b"\n") + 1:]
    return last.startswith(b"data:") and last[5:].strip() == DONE


def last_int(block: bytes, key: bytes) -> int | None:
    """The last integer value of ``"key":`` in the block (JSON), or None."""
    at = block.rfind(b'"' + key + b'":')
    if at < 0:
        return None
    i = at + len(key) + 3
    while i < len(block) and block[i] == 0x20:
        i += 1
    j = i
    while j < len(block) and 0x30 <= block[j] <= 0x39:
        j += 1
    return int(block[i:j]) if j > i else None
