"""In-band errors in every shape inside a 200 stream, and a whole message after the deltas.

Table-driven over ChatStream (pure), then end to end over loopback with the emulator's scenarios.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig
from hermes_nb.emulator import SCENARIO_HEADER, EmulatorHandle, serve_emulator
from hermes_nb.emulator.scenarios import IN_BAND_SCENARIOS
from hermes_nb.wire.payloads import ChatStream, in_band_error_of
from hermes_nb.wire.reading import classify
from hermes_nb.wire.sse import SSEDecoder


def delta(text: str) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}


def run(frames: list[bytes]) -> ChatStream:
    decoder, chat = SSEDecoder(), ChatStream()
    for ev in decoder.feed(b"".join(frames)):
        chat.feed(ev)
        if chat.finished:
            break
    return chat


def data(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


ERROR_SHAPES = [
    # (id, frame, message, type, code, status)
    ("nested", data({"error": {"message": "boom", "type": "server_error", "code": "stream_error"}}),
     "boom", "server_error", "stream_error", None),
    ("nested-with-status", data({"error": {"message": "denied", "type": "upstream_auth_failed", "status": 401}}),
     "denied", "upstream_auth_failed", None, 401),
    ("string", data({"error": "plain text error"}), "plain text error", None, None, None),
    ("flat-status", data({"status": 401, "message": "credentials expired"}), "credentials expired", None, None, 401),
    ("flat-status-code", data({"status_code": 429, "message": "slow down"}), "slow down", None, None, 429),
    ("typed-flat", data({"type": "error", "message": "overloaded", "code": "overloaded"}),
     "overloaded", None, "overloaded", None),
    ("anthropic-data", data({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
     "Overloaded", "overloaded_error", None, None),
    ("anthropic-event", b"event: error\n" + data({"type": "error", "error": {"type": "api_error", "message": "x"}}),
     "x", "api_error", None, None),
    ("event-error-flat", b"event: error\n" + data({"status": 500, "message": "upstream died"}),
     "upstream died", None, None, 500),
    ("event-error-text", b"event: error\ndata: the stream broke\n\n", "the stream broke", None, None, None),
]


@pytest.mark.parametrize(("frame", "message", "etype", "code", "status"), [s[1:] for s in ERROR_SHAPES],
                         ids=[s[0] for s in ERROR_SHAPES])
def test_every_error_shape_ends_the_stream_with_its_message_and_status(frame: bytes, message: str, etype: str | None,
                                                                        code: str | None, status: int | None) -> None:
    chat = run([data(delta("partial ")), frame, data(delta("never"))])
    assert chat.in_band_error and chat.finished and chat.error is not None
    assert chat.text == "partial "  # partial text kept, nothing after the error
    assert (chat.error.message, chat.error.type, chat.error.code_str, chat.error.status) == (
        message, etype, code, status)


@pytest.mark.parametrize("obj", [
    delta("a"),
    {"choices": [], "usage": {"total_tokens": 3}},
    {"message": "a chunk-less object without any error marker"},
    {"type": "ping"},
    {"choices": [{"delta": {"content": "x"}}], "message": "x", "status": 200},
])
def test_normal_frames_are_not_errors(obj: dict[str, Any]) -> None:
    assert in_band_error_of(obj) is None


CONFIG = HermesProxyRuntimeConfig(model="m", provider="nous")


def outcome_of(frames: list[bytes], **fields: Any):  # type: ignore[no-untyped-def]
    from datetime import datetime

    from hermes_nb import Exchange
    from hermes_nb.core.records import RequestRecord, Timings

    chat = run(frames)
    ex = Exchange(request=RequestRecord(method="POST", url="http://127.0.0.1:1/v1/chat/completions"), status=200,
                  content_type="text/event-stream", streamed=True, text=chat.text, done=chat.done,
                  finish_reason=chat.finish_reason, envelope=chat.error, in_band_error=chat.in_band_error,
                  warnings=list(chat.warnings), timings=Timings(started_at=datetime.now(UTC)), **fields)
    return classify(ex, CONFIG)


@pytest.mark.parametrize(("frame", "status", "reason", "words"), [
    (data({"status": 401, "message": "credentials expired"}), "blocked", "auth",
     ["status 401", "credentials expired", "hermes auth status nous"]),
    (data({"status": 429, "message": "slow down"}), "blocked", "rate_limited", ["status 429", "slow down"]),
    (data({"status": 500, "message": "kaboom"}), "failed", "in_band_error", ["status 500", "kaboom"]),
    (data({"type": "error", "message": "overloaded"}), "failed", "in_band_error", ["overloaded"]),
    (b"event: error\n" + data({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
     "failed", "in_band_error", ["Overloaded"]),
])
def test_flat_and_typed_errors_are_classified_not_empty(frame: bytes, status: str, reason: str,
                                                        words: list[str]) -> None:
    outcome = outcome_of([data(delta("partial ")), frame])
    assert (outcome.status, outcome.reason) == (status, reason)
    text = " ".join(outcome.errors)
    assert all(w in text for w in words), text
    assert "partial text kept" in text


def test_a_whole_message_after_the_deltas_is_appended_when_it_completes_them() -> None:
    whole = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello, world."},
                          "finish_reason": "stop"}]}
    chat = run([data(delta("Hello, ")), data(whole), b"data: [DONE]\n\n"])
    assert chat.text == "Hello, world." and chat.finish_reason == "stop"
    assert len(chat.warnings) == 1 and "appended" in chat.warnings[0]


def test_a_whole_message_with_new_text_is_appended_and_noted() -> None:
    other = {"choices": [{"index": 0, "message": {"content": " And more."}}]}
    chat = run([data(delta("Streamed.")), data(other), b"data: [DONE]\n\n"])
    assert chat.text == "Streamed. And more." and "appended" in chat.warnings[0]


def test_a_whole_message_repeating_the_deltas_is_noted_not_doubled() -> None:
    same = {"choices": [{"index": 0, "message": {"content": "ab"}, "finish_reason": "stop"}]}
    chat = run([data(delta("a")), data(delta("b")), data(same), b"data: [DONE]\n\n"])
    assert chat.text == "ab" and len(chat.warnings) == 1 and "repeated" in chat.warnings[0]
    outcome = outcome_of([data(delta("a")), data(delta("b")), data(same), b"data: [DONE]\n\n"])
    assert outcome.status == "passed" and any("repeated" in w for w in outcome.warnings)


# ------------------------------------------------------------------ end to end over loopback


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorHandle]:
    with serve_emulator() as handle:
        yield handle


E2E = {
    # scenario: (status, reason, words in the error)
    "stream-error-flat": ("blocked", "auth", ["status 401", "credentials expired"]),
    "stream-error-typed": ("failed", "in_band_error", ["Upstream overloaded"]),
    "stream-error-anthropic": ("failed", "in_band_error", ["Overloaded"]),
}


def test_every_in_band_scenario_is_tested() -> None:
    assert set(E2E) | {"late-message"} == set(IN_BAND_SCENARIOS)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("scenario", sorted(E2E))
def test_in_band_errors_over_loopback(emu: EmulatorHandle, scenario: str, stream: bool) -> None:
    config = HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="hermes-4-405b", stream=stream,
                                      extra_headers={SCENARIO_HEADER: scenario})
    with HermesClient(config) as client:
        exchange = client.chat([{"role": "user", "content": "Do the mission."}])
    outcome = classify(exchange, config)
    status, reason, words = E2E[scenario]
    assert (outcome.status, outcome.reason) == (status, reason), outcome.errors
    assert all(w in outcome.errors[0] for w in words), outcome.errors
    assert bool(exchange.text) is stream  # the streamed deltas before the error are kept
    if stream:
        assert "partial text kept" in outcome.errors[0]


def test_late_message_over_loopback(emu: EmulatorHandle) -> None:
    config = HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="hermes-4-405b",
                                      extra_headers={SCENARIO_HEADER: "late-message"})
    with HermesClient(config) as client:
        exchange = client.chat([{"role": "user", "content": "Do the mission."}])
        reference = client.chat([{"role": "user", "content": "Do the mission."}], stream=False)
    outcome = classify(exchange, config)
    assert outcome.status == "passed" and outcome.final_message  # the sentinel came in the whole message
    assert exchange.text == reference.text  # nothing dropped, nothing doubled
    assert any("choices[].message" in w for w in outcome.warnings)
