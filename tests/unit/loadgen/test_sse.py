"""Splitting a byte stream into server-sent events, however the reads fall."""

from hypothesis import given
from hypothesis import strategies as st

from tuner.loadgen.sse import DONE, SseSplitter

STREAM = (b'data: {"a": 1}\n\n: a comment\n\nevent: x\ndata: {"b": 2}\n\n'
          b"data: [DONE]\n\n")


def test_whole_events_in_one_read() -> None:
    assert SseSplitter().feed(STREAM) == [b'{"a": 1}', b'{"b": 2}', DONE]


def test_an_event_cut_across_reads_comes_out_when_complete() -> None:
    split = SseSplitter()
    assert split.feed(b'data: {"a"') == []
    assert split.feed(b": 1}\n") == []
    assert split.pending == b'data: {"a": 1}\n'
    assert split.feed(b'\ndata: {"b": 2}\n\nda') == [b'{"a": 1}', b'{"b": 2}']
    assert split.pending == b"da"


def test_crlf_line_ends() -> None:
    assert SseSplitter().feed(b"data: x\r\n\r\ndata: y\r\n\r\n") == [b"x", b"y"]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_cut_of_the_stream_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    split = SseSplitter()
    out: list[bytes] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out += split.feed(STREAM[a:b])
    assert out == [b'{"a": 1}', b'{"b": 2}', DONE]
    assert split.pending == b""
