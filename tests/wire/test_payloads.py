"""Pure wire helpers: error envelopes, Retry-After, request body, chunk interpretation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb import HermesProxyRuntimeConfig
from hermes_nb.wire.payloads import (
    ChatStream,
    chat_request_body,
    media_type,
    parse_chat_completion,
    parse_error_body,
    parse_retry_after,
)
from hermes_nb.wire.sse import ServerSentEvent

# ----------------------------------------------------------------- error envelopes


def test_nested_envelope_with_string_code() -> None:
    body = json.dumps({"error": {"message": "Failed to refresh", "type": "upstream_auth_failed",
                                 "code": "upstream_auth_failed"}})
    env = parse_error_body(body, "application/json; charset=utf-8")
    assert env is not None
    assert (env.message, env.type, env.code, env.shape) == (
        "Failed to refresh", "upstream_auth_failed", "upstream_auth_failed", "nested")


def test_nested_envelope_with_int_code_and_no_type() -> None:
    env = parse_error_body(b'{"error":{"message":"Rate limit exceeded","code":429}}', "application/json")
    assert env is not None
    assert (env.code, env.type, env.code_str) == (429, None, "429")


def test_string_error_shape() -> None:
    env = parse_error_body('{"error": "model not found"}', "application/json")
    assert env is not None and (env.message, env.shape) == ("model not found", "string")


def test_flat_envelope() -> None:
    env = parse_error_body('{"message": "Internal Server Error", "status": 500}', None)
    assert env is not None and (env.message, env.status, env.shape) == ("Internal Server Error", 500, "flat")


@pytest.mark.parametrize(
    ("body", "ctype"),
    [
        ("404: Not Found", "text/plain; charset=utf-8"),
        ("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
        ("{not json", "application/json"),
        ("", "application/json"),
        (None, "application/json"),
        ('{"choices": []}', "application/json"),
        ("[1, 2]", "application/json"),
    ],
)
def test_non_envelopes_give_none(body: str | None, ctype: str) -> None:
    assert parse_error_body(body, ctype) is None


def test_odd_field_types_are_coerced_not_rejected() -> None:
    env = parse_error_body('{"error": {"message": {"detail": "x"}, "type": 5, "code": 400.0, "param": null}}', None)
    assert env is not None
    assert env.message == '{"detail": "x"}' and env.type == "5" and env.code == 400


@pytest.mark.parametrize(
    ("value", "expected"),
    [("Text/Event-Stream; charset=latin-1", "text/event-stream"), ("application/json", "application/json"),
     ("", None), (None, None), ("; charset=utf-8", None)],
)
def test_media_type(value: str | None, expected: str | None) -> None:
    assert media_type(value) == expected


# ----------------------------------------------------------------- Retry-After

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "Fri, 02 Jan 2026 03:04:35 GMT"}, 30.0),
        ({"retry-after": "Thu, 01 Jan 2026 00:00:00 GMT"}, 0.0),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "tomorrow"}, None),
        ({"retry-after": ""}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


# ----------------------------------------------------------------- request body


def cfg(**kw: Any) -> HermesProxyRuntimeConfig:
    return HermesProxyRuntimeConfig(model="hermes-4-405b", **kw)


def test_streaming_body_asks_for_usage() -> None:
    body = chat_request_body(cfg(), [{"role": "user", "content": "hi"}])
    assert body == {"model": "hermes-4-405b", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                    "stream_options": {"include_usage": True}, "temperature": 0}


def test_non_streaming_body_with_max_tokens_and_temperature() -> None:
    body = chat_request_body(cfg(stream=False, max_tokens=64, temperature=0.7), [{"role": "user", "content": "x"}])
    assert body["stream"] is False and "stream_options" not in body
    assert body["max_tokens"] == 64 and body["temperature"] == 0.7


def test_stream_argument_overrides_config() -> None:
    assert chat_request_body(cfg(stream=True), [], stream=False)["stream"] is False
    assert chat_request_body(cfg(stream=False), [], stream=True)["stream_options"] == {"include_usage": True}


def test_system_prompt_is_prepended_once() -> None:
    config = cfg(system_prompt="be brief")
    body = chat_request_body(config, [{"role": "user", "content": "x"}])
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    again = chat_request_body(config, body["messages"])
    assert again["messages"] == body["messages"]


# ----------------------------------------------------------------- chunks


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> ServerSentEvent:
    delta = {} if content is None else {"content": content}
    obj = {"object": "chat.completion.chunk", "model": "m1",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return ServerSentEvent(data=json.dumps(obj))


def feed(*events: ServerSentEvent) -> tuple[ChatStream, list[str]]:
    stream = ChatStream()
    return stream, [stream.feed(e) for e in events]


def test_deltas_accumulate_with_finish_reason_and_usage_only_chunk() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    stream, pieces = feed(
        chunk(""), chunk("Hel"), chunk("lo", "stop"),
        ServerSentEvent(data=json.dumps({"object": "chat.completion.chunk", "choices": [], "usage": usage})),
        ServerSentEvent(data="[DONE]"),
    )
    assert pieces == ["", "Hel", "lo", "", ""]
    assert (stream.text, stream.finish_reason, stream.usage, stream.model) == ("Hello", "stop", usage, "m1")
    assert stream.done and stream.finished and not stream.protocol_errors


def test_done_ends_the_stream_and_later_events_are_ignored() -> None:
    stream, pieces = feed(chunk("a"), ServerSentEvent(data="[DONE]"), chunk("b"))
    assert stream.text == "a" and pieces[-1] == "" and stream.done


def test_message_content_is_used_when_no_delta_came() -> None:
    obj = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}]}
    stream, _ = feed(ServerSentEvent(data=json.dumps(obj)))
    assert stream.text == "whole" and stream.finish_reason == "stop"


def test_empty_pings_and_non_chunk_json_are_skipped() -> None:
    stream, _ = feed(ServerSentEvent(data=""), ServerSentEvent(data="  "), ServerSentEvent(event="ping", data="{}"),
                     ServerSentEvent(data="[1, 2]"), ServerSentEvent(data='"text"'), chunk("ok"))
    assert stream.text == "ok" and not stream.protocol_errors and not stream.finished


def test_invalid_json_is_recorded_not_raised() -> None:
    stream, _ = feed(chunk("a"), ServerSentEvent(data='{"choices": [ broken'), chunk("b"))
    assert stream.text == "ab"
    assert len(stream.protocol_errors) == 1 and "invalid JSON" in stream.protocol_errors[0]


@pytest.mark.parametrize(
    ("event", "message", "code"),
    [
        (ServerSentEvent(event="error", data='{"error": {"message": "boom", "code": 502}}'), "boom", 502),
        (ServerSentEvent(event="error", data='{"message": "flat boom", "status": 500}'), "flat boom", None),
        (ServerSentEvent(event="error", data="upstream went away"), "upstream went away", None),
        (ServerSentEvent(event="error", data=""), "error event in stream", None),
        (ServerSentEvent(data='{"error": {"message": "quota", "type": "rate_limit_exceeded"}}'), "quota", None),
    ],
)
def test_in_band_errors_end_the_stream(event: ServerSentEvent, message: str, code: int | None) -> None:
    stream, _ = feed(chunk("part"), event, chunk("after"))
    assert stream.in_band_error and stream.finished and not stream.done
    assert stream.error is not None and stream.error.message == message and stream.error.code == code
    assert stream.text == "part"


def test_parse_chat_completion() -> None:
    body = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}],
            "usage": {"total_tokens": 4}}
    assert parse_chat_completion(body) == ("hi", "length", {"total_tokens": 4}, "m")
    assert parse_chat_completion({"choices": []}) == ("", None, None, None)
    assert parse_chat_completion("nope") == ("", None, None, None)
    assert parse_chat_completion({"choices": [{"message": {"content": None}}]}) == ("", None, None, None)


def _canon(value: Any) -> Any:
    """Type-exact form for comparison: 1 != 1.0 != True, -0.0 != 0.0, nan == nan."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, list):
        return ("list", [_canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, _canon(v)) for k, v in value.items()])
    return (type(value).__name__, value)


_KEYS = ["choices", "delta", "content", "message", "usage", "model", "error", "finish_reason", "index", "type",
         "code", "status"]
_chunkish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.sampled_from(_KEYS),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), c, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["message", "error", "ping", ""]),
                          _chunkish.map(json.dumps) | st.text(max_size=20) | st.just("[DONE]")), max_size=8))
def test_chat_stream_never_raises(frames: list[tuple[str, str]]) -> None:
    stream = ChatStream()
    for event, data in frames:
        piece = stream.feed(ServerSentEvent(event or "message", data))
        assert isinstance(piece, str)
    assert isinstance(stream.text, str)
    assert stream.finished == (stream.done or stream.error is not None)
    assert stream.in_band_error == (stream.error is not None)
    assert all(isinstance(p, str) for p in stream.protocol_errors)


def _state(stream: ChatStream) -> Any:
    return (stream.text, stream.done, stream.finished, stream.finish_reason, _canon(stream.usage), stream.model,
            stream.error, stream.in_band_error, stream.protocol_errors, stream.warnings, stream.reasoning)


_numberish = (st.integers() | st.integers(min_value=2**63, max_value=2**70) | st.floats() | st.none()
              | st.text(max_size=4))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(
    _chunkish.map(json.dumps),
    st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens"]), _numberish,
                    max_size=3).map(lambda u: json.dumps({"choices": [], "usage": u})),
    st.dictionaries(st.sampled_from(["message", "code", "status", "type"]), _numberish, max_size=3)
    .map(lambda e: json.dumps({"error": e})),
    st.sampled_from(['{"choices": [{"delta": {"content": "\\ud800x"}}]}', '{"choices": NaN}', "[DONE]",
                     '{"choices": [{"delta": {"content": "a"}}], "n": 99999999999999999999}']),
), max_size=6))
def test_chat_stream_with_orjson_equals_chat_stream_with_json_loads(frames: list[str]) -> None:
    """ChatStream parses with orjson; the same frames read by json.loads alone give the same stream state."""
    import hermes_nb.wire.payloads as payloads

    fast = ChatStream()
    fast_pieces = [fast.feed(ServerSentEvent(data=d)) for d in frames]
    saved = payloads.orjson
    payloads.orjson = SimpleNamespace(  # type: ignore[assignment]
        loads=json.loads, JSONDecodeError=(ValueError, RecursionError))
    try:
        ref = ChatStream()
        ref_pieces = [ref.feed(ServerSentEvent(data=d)) for d in frames]
    finally:
        payloads.orjson = saved
    assert fast_pieces == ref_pieces
    assert _state(fast) == _state(ref)


def test_odd_error_values_still_give_an_envelope() -> None:
    stream, _ = feed(ServerSentEvent(data='{"error": [1, 2]}'))
    assert stream.in_band_error and stream.error is not None and "[1, 2]" in (stream.error.message or "")


@pytest.mark.parametrize("data", ['{"a":' + "[" * 100_000, "[" * 100_000 + "]" * 100_000])
def test_absurdly_nested_json_is_a_protocol_error_not_a_crash(data: str) -> None:
    stream, _ = feed(ServerSentEvent(data=data), ServerSentEvent(event="error", data=data))
    assert stream.protocol_errors or not stream.finished
    assert parse_error_body(data, "application/json") is None
