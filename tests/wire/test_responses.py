"""OpenAI's Responses API (``/v1/responses``): forwarded by an xai proxy, ``path_not_allowed`` on nous.

The emulator's upstream profile serves it (streamed: ``response.created`` … ``response.output_text.delta`` …
``response.completed``, no ``[DONE]``; and not streamed); the client reads it, classification knows its
in-band errors, the probe checks it on every proxy and the contract records the stream's shape; the console
and ``%%hermes_chat`` can send it. The real proxy relaying it: tests/proxy/test_rig.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig
from hermes_nb.core.facts import contracts_dir
from hermes_nb.emulator import serve_emulator
from hermes_nb.kit import ConsoleSession
from hermes_nb.kit.session import ROUTES, check_body
from hermes_nb.proxy.probe import probe
from hermes_nb.wire.payloads import responses_request_body
from hermes_nb.wire.reading import classify

STREAM_SHAPE = ["response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.completed"]


@pytest.fixture(scope="module")
def upstream() -> Iterator[Any]:
    with serve_emulator(profile="upstream") as emu:
        yield emu


def _send(endpoint: str, *, stream: bool, scenario: str = "ok") -> tuple[Any, Any]:
    config = HermesProxyRuntimeConfig(endpoint=endpoint, model="grok-4.3")
    with HermesClient(config) as client:
        body = responses_request_body(config, "Say pong", stream=stream)
        ex = client.send(client.build_request("POST", "/responses", json=body, sse=stream,
                                              headers={"X-Hermes-Emulator-Scenario": scenario}), sse=stream)
    return ex, classify(ex, config)


def test_the_upstream_streams_responses_events_without_done(upstream: Any) -> None:
    with httpx.stream("POST", upstream.endpoint + "/responses", json={"model": "m", "input": "hi", "stream": True},
                      timeout=10) as r:
        text = r.read().decode()
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("event: ")]
    assert list(dict.fromkeys(events)) == STREAM_SHAPE and events.count("response.output_text.delta") > 1
    assert "[DONE]" not in text
    last = json.loads(text.strip().splitlines()[-1].split(": ", 1)[1])
    assert last["type"] == "response.completed" and last["response"]["status"] == "completed"


def test_not_streamed_and_stream_read_the_same_text(upstream: Any) -> None:
    streamed, s_outcome = _send(upstream.endpoint, stream=True)
    whole, w_outcome = _send(upstream.endpoint, stream=False)
    assert streamed.text == whole.text and "Say pong" in whole.text
    assert (s_outcome.status, s_outcome.reason) == (w_outcome.status, w_outcome.reason) == ("passed", "ok")
    assert streamed.done is False and streamed.finish_reason == "stop" and streamed.usage["output_tokens"] > 0
    assert whole.json_body["object"] == "response" and whole.model == "grok-4.3"


@pytest.mark.parametrize(("scenario", "stream", "status", "reason"), [
    ("length", True, "passed", "length"),            # response.incomplete (max_output_tokens)
    ("length", False, "passed", "length"),
    ("stream-error-event", True, "failed", "in_band_error"),  # response.failed with an error object
    ("truncated", True, "failed", "truncated"),       # no terminal event
    ("empty", True, "failed", "empty"),
    ("rate-limited", True, "blocked", "rate_limited"),
    ("auth-stale", False, "blocked", "auth"),
])
def test_responses_outcomes_are_classified(upstream: Any, scenario: str, stream: bool, status: str,
                                           reason: str) -> None:
    _, outcome = _send(upstream.endpoint, stream=stream, scenario=scenario)
    assert (outcome.status, outcome.reason) == (status, reason)


def test_probe_records_the_stream_shape_on_xai_and_path_not_allowed_on_nous() -> None:
    with serve_emulator(provider="xai") as xai, serve_emulator() as nous:
        on_xai, on_nous = probe(xai.endpoint, budget_s=20), probe(nous.endpoint, budget_s=20)
    by = {r.name: r for r in on_xai.routes}
    responses = by["responses"]
    assert responses.outcome == "forwarded" and responses.json_keys and "output" in responses.json_keys
    assert by["responses_stream"].sse_events == STREAM_SHAPE and by["responses_stream"].done is False
    assert by["chat_stream"].sse_events == ["chat.completion.chunk", "[DONE]"]
    refused = {r.name: r for r in on_nous.routes}
    assert {refused[n].outcome for n in ("responses", "responses_stream")} == {"path_not_allowed"}
    assert {refused[n].answered_by for n in ("responses", "responses_stream")} == {"proxy"}


def test_every_recorded_contract_says_what_responses_does() -> None:
    for path in sorted(contracts_dir().glob("hermes-agent-*.json")):
        doc = json.loads(path.read_text("utf-8"))
        for state, section in doc["states"].items():
            by = {r["name"]: r for r in section["routes"]}
            if doc["provider"] == "xai" and state == "live":
                assert by["responses_stream"]["sse_events"] == STREAM_SHAPE, path.name
                # recorded behind hermes_nb's upstream: what the stream's events are is the proxy's to keep
                assert "sse_events" in by["responses_stream"]["owners"]["proxy"]
            elif doc["provider"] == "xai":
                assert by["responses"]["outcome"] == "auth_failed", path.name
            else:
                assert by["responses"]["outcome"] == "path_not_allowed", path.name


def test_console_route_picker_sends_responses() -> None:
    assert {"responses (streamed)", "responses"} <= set(ROUTES)
    assert not check_body('{"model": "m"}', ROUTES["responses"]).ok  # no "input"
    assert check_body('{"input": "hi"}', ROUTES["responses"]).ok
    session = ConsoleSession(provider="xai", delay_s=0.01)
    try:
        job = session.send("", "grok-4.3", "ok", "responses (streamed)", prompt="hello there")
        assert job.wait(10)
        entry = session.history[-1]
        assert (entry.verdict, entry.reason, entry.provider) == ("passed", "ok", "xai")
        assert entry.exchange.request.url.endswith("/v1/responses") and "hello there" in entry.exchange.text
        sent = entry.exchange.request.body
        assert sent["input"] == "hello there" and sent["stream"] is True
    finally:
        session.close()


def test_hermes_chat_magic_sends_responses() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    try:
        with capture_output():
            result = shell.run_cell_magic("hermes_chat", "--route responses", "Say hello\n")
        assert result.verdict == "passed" and "Say hello" in result.text
        assert result.exchange.request.url.endswith("/v1/responses")
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")
