"""The incremental SSE decoder: WHATWG line and field rules, on bytes."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb.wire.sse import ServerSentEvent, SSEDecoder


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def datas(*chunks: bytes) -> list[str]:
    return [e.data for e in decode(*chunks)]


# ----------------------------------------------------------------- reference decoder

_LINE_END = re.compile(rb"\r\n|\r|\n")


def reference(stream: bytes) -> list[ServerSentEvent]:
    """A slow, obviously-WHATWG decoder: whole stream, one line at a time."""
    if stream.startswith(b"\xef\xbb\xbf"):
        stream = stream[3:]
    pieces = _LINE_END.split(stream)
    complete = pieces[:-1]  # the last piece has no terminator: discarded at EOF
    out: list[ServerSentEvent] = []
    event, data, last_id, retry = "", [], None, None
    for raw in complete:
        line = raw.decode("utf-8", "replace")
        if line == "":
            if data:
                out.append(ServerSentEvent(event or "message", "\n".join(data), last_id, retry))
            event, data, retry = "", [], None
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = line, ""
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return out


# ----------------------------------------------------------------- line endings


@pytest.mark.parametrize("nl", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_every_line_ending_gives_the_same_events(nl: bytes) -> None:
    stream = nl.join([b"event: delta", b"data: one", b"data: two", b"", b"data: three", b"", b""])
    assert decode(stream) == [
        ServerSentEvent("delta", "one\ntwo"),
        ServerSentEvent("message", "three"),
    ]


def test_cr_and_lf_split_across_reads_is_one_line_end() -> None:
    # a lone LF after the CR would be a blank line and split the event in two
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [ServerSentEvent("message", "a\nb")]


def test_cr_at_end_of_read_then_new_line_is_a_line_end() -> None:
    assert datas(b"data: a\r", b"data: b\r", b"\r") == ["a\nb"]


def test_byte_at_a_time_equals_whole() -> None:
    stream = b"event: x\r\ndata: h\xc3\xa9llo\r\n\r\ndata: 2\r\r: c\ndata: 3\n\n"
    assert decode(*[bytes([b]) for b in stream]) == decode(stream) == reference(stream)


# ----------------------------------------------------------------- fields


def test_data_lines_join_and_one_space_is_stripped() -> None:
    assert datas(b"data:x\ndata:  two spaces\ndata\ndata:\n\n") == ["x\n two spaces\n\n"]


def test_comments_and_unknown_fields_are_ignored() -> None:
    assert decode(b": ping\n\nfoo: bar\ndata: d\n: keep-alive\n\n") == [ServerSentEvent("message", "d")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: error\n\nid: 7\n\n: ping\n\n") == []


def test_event_name_resets_but_id_persists() -> None:
    events = decode(b"event: a\nid: 1\ndata: x\n\ndata: y\n\nid\ndata: z\n\n")
    assert [(e.event, e.id, e.data) for e in events] == [("a", "1", "x"), ("message", "1", "y"), ("message", "", "z")]


def test_id_with_nul_is_ignored() -> None:
    assert decode(b"id: 5\ndata: a\n\nid: x\x00y\ndata: b\n\n")[1].id == "5"


@pytest.mark.parametrize(("value", "expected"), [(b"3000", 3000), (b"3s", None), (b"-1", None), (b"", None)])
def test_retry_only_digits(value: bytes, expected: int | None) -> None:
    assert decode(b"retry: " + value + b"\ndata: a\n\n")[0].retry == expected


def test_empty_data_line_dispatches_empty_data() -> None:
    assert decode(b"data:\n\n") == [ServerSentEvent("message", "")]


def test_leading_bom_is_ignored_once() -> None:
    assert decode(b"\xef\xbb", b"\xbfdata: a\n\n") == [ServerSentEvent("message", "a")]
    assert decode(b"data: \xef\xbb\xbfa\n\n")[0].data == "\ufeffa"


# ----------------------------------------------------------------- bytes and text


def test_utf8_is_decoded_per_line_not_per_read() -> None:
    text = "data: é€😀\n\n".encode()
    for cut in range(len(text)):
        assert datas(text[:cut], text[cut:]) == ["é€😀"], cut


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert datas(b"data: a\xff\xfeb\xe2\x82\n\n") == ["a\ufffd\ufffdb\ufffd"]


def test_unicode_line_separators_are_not_line_breaks() -> None:
    payload = "a\u2028b\u0085c\x0bd\x0ce"
    assert datas(f"data: {payload}\n\n".encode()) == [payload]


def test_no_line_length_trap() -> None:
    big = b"x" * (3 * 1024 * 1024)
    stream = b"data: " + big + b"\n\n"
    chunks = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    assert datas(*chunks) == [big.decode()]


# ----------------------------------------------------------------- end of stream


def test_pending_event_without_blank_line_is_dropped_at_eof() -> None:
    assert datas(b"data: a\n\ndata: b\n") == ["a"]


def test_incomplete_last_line_is_dropped() -> None:
    assert datas(b"data: a\n\ndata: b") == ["a"]


def test_empty_reads_are_harmless() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n\n") == [ServerSentEvent("message", "a")]


# ----------------------------------------------------------------- properties

_ALPHABET = [b"\n", b"\r", b"\r\n", b":", b" ", b"data", b"event", b"id", b"retry", b"1", b"x",
             b"\xc3\xa9", b"\xc3", b"\xff", b"\x00", b"\xef\xbb\xbf", b"[DONE]", b"{}"]
streams = st.lists(st.sampled_from(_ALPHABET), max_size=60).map(b"".join)


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    bounds = [0, *points, len(stream)]
    return [stream[a:b] for a, b in pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0), max_size=12))
def test_random_bytes_never_crash(stream: bytes, cuts: list[int]) -> None:
    events = decode(*_split(stream, cuts))
    assert all(isinstance(e.data, str) for e in events)


@settings(max_examples=400, deadline=None)
@given(streams, st.lists(st.integers(min_value=0), max_size=12))
def test_any_split_matches_the_reference_decoder(stream: bytes, cuts: list[int]) -> None:
    assert decode(*_split(stream, cuts)) == reference(stream)


def _valid_stream(items: list[tuple[str, str]]) -> bytes:
    out = []
    for i, (event, data) in enumerate(items):
        nl = ["\n", "\r", "\r\n"][i % 3]
        lines = ([f"event: {event}"] if event else []) + [f"data: {d}" for d in data.split("\n")]
        out.append(nl.join(lines) + nl + nl)
    return "".join(out).encode()


_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_text.filter(lambda s: ":" not in s), st.lists(_text, min_size=1, max_size=3).map("\n".join)),
                max_size=8),
       st.lists(st.integers(min_value=0), max_size=20))
def test_every_split_of_a_valid_stream_yields_the_same_events(items: list[tuple[str, str]], cuts: list[int]) -> None:
    stream = _valid_stream(items)
    whole = decode(stream)
    assert [(e.event, e.data) for e in whole] == [(event or "message", data) for event, data in items]
    assert decode(*_split(stream, cuts)) == whole


def test_events_are_plain_instances() -> None:
    event = decode(b"event: e\nid: 1\nretry: 5\ndata: x\n\n")[0]
    assert type(event) is ServerSentEvent and event == ServerSentEvent("e", "x", "1", 5)
