"""Splitting a byte stream into server-sent events, however the reads fall."""

from hypothesis import given
from hypothesis import strategies as st

from tuner.loadgen.sse import DONE, SseSplitter, ends_with_done, last_int, payloads

STREAM = (b'data: {"a": 1}\n\n: a comment\n\nevent: x\ndata: {"b": 2}\n\n'
          b"data: [DONE]\n\n")


def test_whole_events_in_one_read() -> None:
    block = SseSplitter().feed(STREAM)
    assert payloads(block) == [b'{"a": 1}', b'{"b": 2}', DONE]
    assert ends_with_done(block)


def test_an_event_cut_across_reads_comes_out_when_complete() -> None:
    split = SseSplitter()
    assert split.feed(b'data: {"a"') == b""
    assert split.feed(b": 1}\n") == b""
    assert split.pending == b'data: {"a": 1}\n'
    block = split.feed(b'\ndata: {"b": 2}\n\nda')
    assert payloads(block) == [b'{"a": 1}', b'{"b": 2}']
    assert not ends_with_done(block)
    assert split.pending == b"da"


def test_crlf_line_ends() -> None:
    assert payloads(SseSplitter().feed(b"data: x\r\n\r\ndata: y\r\n\r\n")) == [b"x", b"y"]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_cut_of_the_stream_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    split = SseSplitter()
    out: list[bytes] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out += payloads(split.feed(STREAM[a:b]))
    assert out == [b'{"a": 1}', b'{"b": 2}', DONE]
    assert split.pending == b""


def test_the_last_count_of_a_block_is_read_from_its_bytes() -> None:
    block = (b'data: {"choices":[{"text":"\\"completion_tokens\\":99"}],'
             b'"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n'
             b'data: {"choices":[],"usage":{"prompt_tokens": 7, "completion_tokens": 12}}')
    assert last_int(block, b"completion_tokens") == 12  # the text's escaped quotes never match
    assert last_int(block, b"prompt_tokens") == 7
    assert last_int(b'data: {"x": 1}', b"completion_tokens") is None
    assert last_int(b'"completion_tokens":null', b"completion_tokens") is None


def test_done_is_only_the_last_event_never_text_that_says_it() -> None:
    assert not ends_with_done(b'data: {"text": "data: [DONE]"}')
    assert ends_with_done(b'data: {"text": "x"}\n\ndata:[DONE]')
