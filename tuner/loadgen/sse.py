"""Server-sent events from raw bytes: the ``data:`` payloads of the complete events in a chunk.

A network read may end in the middle of an event, or hold several; the splitter keeps the
unfinished tail for the next read. Events end at a blank line (``\\n\\n``, or ``\\r\\n\\r\\n``);
lines other than ``data:`` (comments, ``event:``, ``id:``) are skipped. Payloads stay bytes:
the client parses JSON only where a figure needs it.
"""

from __future__ import annotations

DONE = b"[DONE]"


class SseSplitter:
    """Feed it each chunk as it arrives; it returns the payloads that chunk completed."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._tail + chunk if self._tail else chunk
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        end = data.rfind(b"\n\n")
        if end < 0:
            self._tail = data
            return []
        self._tail = data[end + 2:]
        payloads = []
        for event in data[:end].split(b"\n\n"):
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    payloads.append(line[5:].strip())
        return payloads

    @property
    def pending(self) -> bytes:
        """What arrived after the last complete event (a stream that ends here was cut)."""
        return self._tail
