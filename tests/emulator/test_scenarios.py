"""Every emulator scenario: the raw wire over loopback, then through HermesClient + classify, table-driven."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig
from hermes_nb.emulator import SCENARIO_HEADER, SCENARIOS, EmulatorHandle, serve_emulator
from hermes_nb.wire.reading import classify
from hermes_nb.wire.sentinel import extract_final_message
from hermes_nb.wire.sse import SSEDecoder

CHAT = {"model": "hermes-4-405b", "messages": [{"role": "user", "content": "Do the mission."}], "stream": True}
#: idle read timeout for the stall scenario: the client gives up, the emulator never sends again
IDLE_S = 0.5


@pytest.fixture(scope="module")
def emus() -> Iterator[dict[str, EmulatorHandle]]:
    with serve_emulator() as agent, serve_emulator(profile="upstream") as upstream, \
            serve_emulator(profile="seed") as seed:
        yield {"hermes-agent": agent, "upstream": upstream, "seed": seed}


def raw_stream(emu: EmulatorHandle, scenario: str,
               body: dict[str, object] | None = None) -> tuple[httpx.Response, bytes, str | None]:
    """POST a chat request; return the response, every byte received and the transport error, if any."""
    data, error = b"", None
    headers = {SCENARIO_HEADER: scenario, "Authorization": "Bearer probe"}
    with httpx.Client(trust_env=False, timeout=httpx.Timeout(10, read=IDLE_S)) as client:
        with client.stream("POST", emu.endpoint + "/chat/completions", json=body or CHAT, headers=headers) as r:
            try:
                for chunk in r.iter_raw():
                    data += chunk
            except httpx.TransportError as exc:
                error = type(exc).__name__
    return r, data, error


def frames(data: bytes) -> list[str]:
    decoder = SSEDecoder()
    return [e.data for e in decoder.feed(data)]


def text_of(datas: list[str]) -> str:
    out = ""
    for d in datas:
        if d == "[DONE]":
            break
        obj = json.loads(d)
        for choice in obj.get("choices", []):
            out += choice["delta"].get("content") or ""
    return out


def test_scenario_list_is_the_contract() -> None:
    assert SCENARIOS == ("ok", "no-sentinel", "empty", "length", "auth-stale", "rate-limited", "server-error",
                         "bad-gateway", "model-missing", "stream-error-event", "truncated", "slow", "stall", "reset",
                         "malformed", "no-done")


@pytest.mark.parametrize("profile", ["hermes-agent", "upstream", "seed"])
def test_ok_stream_shape(emus: dict[str, EmulatorHandle], profile: str) -> None:
    r, data, error = raw_stream(emus[profile], "ok")
    assert error is None and r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
    datas = frames(data)
    assert datas[-1] == "[DONE]"
    chunks = [json.loads(d) for d in datas[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(content_chunks) >= 5  # several deltas
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and chunks[-2]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert len({c["id"] for c in chunks}) == 1 and all(c["object"] == "chat.completion.chunk" for c in chunks)
    final = extract_final_message(text_of(datas))
    assert final and final.startswith("Emulator run ")


def test_ok_non_stream_carries_the_same_text(emus: dict[str, EmulatorHandle]) -> None:
    _, data, _ = raw_stream(emus["hermes-agent"], "ok")
    body = httpx.post(emus["hermes-agent"].endpoint + "/chat/completions", json={**CHAT, "stream": False},
                      trust_env=False).json()
    assert body["object"] == "chat.completion" and body["choices"][0]["finish_reason"] == "stop"
    assert body["choices"][0]["message"]["content"] == text_of(frames(data))


def test_include_usage_false_drops_the_usage_chunk(emus: dict[str, EmulatorHandle]) -> None:
    _, data, _ = raw_stream(emus["upstream"], "ok", {**CHAT, "stream_options": {"include_usage": False}})
    assert all("usage" not in json.loads(d) for d in frames(data)[:-1])


def test_text_shaping_scenarios(emus: dict[str, EmulatorHandle]) -> None:
    emu = emus["hermes-agent"]
    ok_text = text_of(frames(raw_stream(emu, "ok")[1]))
    assert text_of(frames(raw_stream(emu, "slow")[1])) == ok_text
    plain = text_of(frames(raw_stream(emu, "no-sentinel")[1]))
    assert plain and extract_final_message(plain) is None and ok_text.startswith(plain.rstrip("\n"))
    empty = frames(raw_stream(emu, "empty")[1])
    assert text_of(empty) == "" and empty[-1] == "[DONE]"
    length = frames(raw_stream(emu, "length")[1])
    assert json.loads(length[-3])["choices"][0]["finish_reason"] == "length"
    assert ok_text.startswith(text_of(length)) and len(text_of(length)) < len(ok_text)


@pytest.mark.parametrize("profile", ["hermes-agent", "upstream"])
def test_stream_fault_scenarios_on_the_wire(emus: dict[str, EmulatorHandle], profile: str) -> None:
    emu = emus[profile]
    datas = frames(raw_stream(emu, "stream-error-event")[1])
    assert json.loads(datas[-1])["error"]["code"] == "stream_error" and text_of(datas[:-1])
    _, data, error = raw_stream(emu, "truncated")
    datas = frames(data)
    assert error is None and text_of(datas) and "[DONE]" not in datas
    assert all(c["finish_reason"] is None for d in datas for c in json.loads(d)["choices"])
    bad = [d for d in frames(raw_stream(emu, "malformed")[1]) if d != "[DONE]" and not _is_json(d)]
    assert len(bad) == 1
    _, data, error = raw_stream(emu, "stall")
    assert error == "ReadTimeout" and text_of(frames(data))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_reset_is_a_tcp_rst_direct_and_a_clean_end_through_the_proxy(emus: dict[str, EmulatorHandle]) -> None:
    for profile in ("upstream", "seed"):
        _, data, error = raw_stream(emus[profile], "reset")
        assert error == "ReadError" and text_of(frames(data))  # ECONNRESET after some text
    # the real proxy catches the broken upstream and ends its own body cleanly (no [DONE], no error)
    _, data, error = raw_stream(emus["hermes-agent"], "reset")
    assert error is None and text_of(frames(data)) and "[DONE]" not in frames(data)


# --------------------------------------------------------------------------- through HermesClient + classify

#: scenario -> (status, reason, partial text kept) for a streaming chat through the hermes-agent profile
STREAM_TABLE = {
    "ok": ("passed", "ok", True),
    "no-sentinel": ("passed", "no_sentinel", True),
    "empty": ("failed", "empty", False),
    "length": ("passed", "length", True),
    "auth-stale": ("blocked", "auth", False),
    "rate-limited": ("blocked", "rate_limited", False),
    "server-error": ("failed", "http_error", False),
    "bad-gateway": ("failed", "http_error", False),
    "model-missing": ("blocked", "model_missing", False),
    "stream-error-event": ("failed", "in_band_error", True),
    "truncated": ("failed", "truncated", True),
    "slow": ("passed", "ok", True),
    "stall": ("failed", "read_timeout", True),
    "reset": ("failed", "truncated", True),  # the proxy turns the upstream's RST into a clean end
    "malformed": ("failed", "protocol_error", True),
    "no-done": ("passed", "ok", True),  # a finish_reason ends it; hermes-agent >= 0.21 appends the [DONE]
}
#: where the non-streamed answer differs
NON_STREAM = {
    "stream-error-event": ("failed", "in_band_error", False),
    "truncated": ("failed", "protocol_error", False),
    "stall": ("failed", "read_timeout", False),
    "reset": ("failed", "protocol_error", False),
    "malformed": ("failed", "protocol_error", False),
}


def run_client(emu: EmulatorHandle, scenario: str, *, stream: bool = True):  # type: ignore[no-untyped-def]
    config = HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="hermes-4-405b", stream=stream,
                                      request_timeout_ms=20_000, auth_token="sk-canary-0a1b2c3d4e5f",
                                      extra_headers={SCENARIO_HEADER: scenario})
    with HermesClient(config, idle_timeout_s=IDLE_S) as client:
        exchange = client.chat([{"role": "user", "content": "Do the mission."}])
    return exchange, classify(exchange, config)


def test_table_covers_every_scenario() -> None:
    assert set(STREAM_TABLE) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_classifies_per_the_table(emus: dict[str, EmulatorHandle], scenario: str) -> None:
    exchange, outcome = run_client(emus["hermes-agent"], scenario)
    status, reason, partial = STREAM_TABLE[scenario]
    assert (outcome.status, outcome.reason) == (status, reason)
    assert bool(exchange.text) is partial
    if status == "failed" and partial:
        assert "partial text kept" in " ".join(outcome.errors)
    if scenario == "rate-limited":
        assert exchange.retry_after_s == 2
    if scenario == "auth-stale":
        assert "hermes auth status nous" in " ".join(outcome.errors)
    assert "sk-canary-0a1b2c3d4e5f" not in exchange.model_dump_json()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_non_streamed(emus: dict[str, EmulatorHandle], scenario: str) -> None:
    exchange, outcome = run_client(emus["hermes-agent"], scenario, stream=False)
    status, reason, partial = NON_STREAM.get(scenario, STREAM_TABLE[scenario])
    assert (outcome.status, outcome.reason) == (status, reason)
    assert bool(exchange.text) is partial


@pytest.mark.parametrize("scenario,status", [("upstream-unreachable", 502), ("upstream-timeout", 504)])
def test_proxy_faults_classify_as_upstream_down(emus: dict[str, EmulatorHandle], scenario: str, status: int) -> None:
    """The seed's `failed`, with a reason and a hint that name the proxy's upstream, not the proxy."""
    exchange, outcome = run_client(emus["hermes-agent"], scenario)
    assert exchange.status == status and exchange.envelope is not None
    assert exchange.envelope.code == scenario.replace("-", "_")
    assert (outcome.status, outcome.reason) == ("failed", scenario.replace("-", "_"))
    assert outcome.hint is not None and "its upstream" in outcome.hint and "hermes proxy start" not in outcome.hint


@pytest.mark.parametrize("profile", ["upstream", "seed"])
def test_direct_reset_is_a_broken_stream_with_partial_text(emus: dict[str, EmulatorHandle], profile: str) -> None:
    exchange, outcome = run_client(emus[profile], "reset")
    assert exchange.transport_error is not None and exchange.transport_error.kind == "reset"
    assert (outcome.status, outcome.reason) == ("failed", "stream_broken")
    assert exchange.text and "partial text kept" in " ".join(outcome.errors)
