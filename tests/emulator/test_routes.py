"""Emulator profiles × routes over real loopback sockets: the real proxy's facts, the seed's contract, the upstream."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator

import aiohttp
import httpx
import pytest

from hermes_nb.emulator import SCENARIO_HEADER, EmulatorHandle, create_app, scenarios, serve_emulator

SERVER = f"Python/{sys.version_info.major}.{sys.version_info.minor} aiohttp/{aiohttp.__version__}"
JSON_CT = "application/json; charset=utf-8"
ALLOWED = "/chat/completions, /completions, /embeddings, /models"
CHAT = {"model": "hermes-4-405b", "messages": [{"role": "user", "content": "Summarise the mission."}]}
STALE = {"error": {"message": "Failed to refresh Nous Portal credentials: Invalid refresh token",
                   "type": "upstream_auth_failed", "code": "upstream_auth_failed"}}
CANARY = "sk-canary-3f9a1c7e5b2d4860"


def not_allowed(path: str) -> dict[str, dict[str, str]]:
    return {"error": {"message": f"Path {path} is not forwarded by this proxy. Allowed: {ALLOWED}",
                      "type": "path_not_allowed", "code": "path_not_allowed"}}


@pytest.fixture(scope="module")
def agent() -> Iterator[EmulatorHandle]:
    with serve_emulator() as emu:
        yield emu


@pytest.fixture(scope="module")
def seed_emu() -> Iterator[EmulatorHandle]:
    with serve_emulator(profile="seed") as emu:
        yield emu


@pytest.fixture(scope="module")
def upstream() -> Iterator[EmulatorHandle]:
    with serve_emulator(profile="upstream", models=["m-one", "m-two"]) as emu:
        yield emu


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=30) as client:
        yield client


def scen(name: str, **extra: str) -> dict[str, str]:
    return {SCENARIO_HEADER: name, **extra}


# --------------------------------------------------------------------------- hermes-agent (the real proxy)


@pytest.mark.parametrize("path", ["/", "/v1", "/nope", "/v2/models", "/health/"])
def test_agent_outside_v1_is_aiohttps_default_404(agent: EmulatorHandle, http: httpx.Client, path: str) -> None:
    r = http.get(agent.base_url + path)
    assert r.status_code == 404
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.text == "404: Not Found"
    assert r.headers["server"] == SERVER


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
@pytest.mark.parametrize("tail", ["/", "/health", "/responses", "/models/x", "/chat/completions/", "/audio/speech"])
def test_agent_other_v1_tails_are_path_not_allowed(agent: EmulatorHandle, http: httpx.Client, tail: str,
                                                   method: str) -> None:
    r = http.request(method, agent.base_url + "/v1" + tail)
    assert r.status_code == 404
    assert r.headers["content-type"] == JSON_CT
    assert r.content == json.dumps(not_allowed("/v1" + tail)).encode()  # aiohttp json_response bytes
    assert r.headers["server"] == SERVER


def test_agent_health_and_its_methods(agent: EmulatorHandle, http: httpx.Client) -> None:
    r = http.get(agent.base_url + "/health")
    assert r.status_code == 200 and r.headers["content-type"] == JSON_CT
    assert r.content == b'{"status": "ok", "upstream": "Nous Portal", "authenticated": true}'
    assert http.head(agent.base_url + "/health").status_code == 200
    r = http.post(agent.base_url + "/health")
    assert (r.status_code, r.text, r.headers["allow"]) == (405, "405: Method Not Allowed", "GET,HEAD")
    assert r.headers["content-type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize("auth", [None, "Basic eHl6", "Bearer", f"Bearer {CANARY}"])
def test_agent_discards_authorization_and_does_not_require_it(agent: EmulatorHandle, http: httpx.Client,
                                                              auth: str | None) -> None:
    headers = {} if auth is None else {"Authorization": auth}
    r = http.post(agent.endpoint + "/chat/completions", json=CHAT, headers=headers)
    assert r.status_code == 200 and r.json()["object"] == "chat.completion"


def test_agent_never_records_or_logs_the_bearer(http: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hermes_nb.emulator")
    with serve_emulator() as emu:
        http.post(emu.endpoint + "/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {CANARY}"})
        http.get(emu.endpoint + "/models", headers={"X-Api-Key": CANARY}, params={"api_key": CANARY})
        records = emu.wait_for_requests(2)
    assert records[1].query == "api_key=<redacted>"
    assert [r.headers.get("authorization") for r in records] == ["Bearer <redacted>", None]
    assert records[1].headers["x-api-key"] == "<redacted>"
    assert CANARY not in repr(records) and CANARY not in caplog.text
    # this emulator's lines only (another test's emulator may still be finishing a request and logging)
    lines = [rec.getMessage() for rec in caplog.records
             if rec.name == "hermes_nb.emulator" and rec.threadName == f"hermes-nb-emulator-{emu.port}"]
    assert len(lines) == 2
    assert "POST /v1/chat/completions -> 200 scenario=ok" in lines[0]
    assert "GET /v1/models -> 200 scenario=ok" in lines[1]


@pytest.mark.parametrize("method,path,body", [
    ("POST", "/chat/completions", {**CHAT, "stream": True}),
    ("POST", "/chat/completions", CHAT),
    ("POST", "/completions", {"model": "m", "prompt": "x", "stream": True}),
    ("POST", "/embeddings", {"model": "m", "input": "x"}),
    ("GET", "/models", None),
    ("POST", "/models", None),
])
def test_agent_auth_stale_is_401_on_every_forwarded_route(http: httpx.Client, method: str, path: str,
                                                          body: object) -> None:
    with serve_emulator(scenario="auth-stale") as emu:
        r = http.request(method, emu.endpoint + path, json=body, headers={"Accept": "text/event-stream"})
        assert r.status_code == 401
        assert r.headers["content-type"] == JSON_CT  # one JSON body, not SSE, even for a stream request
        assert r.content == json.dumps(STALE).encode()
        health = http.get(emu.base_url + "/health").json()
        assert health == {"status": "ok", "upstream": "Nous Portal", "authenticated": False}
        # the route check comes first; the body is never read
        assert http.get(emu.endpoint + "/files").json() == not_allowed("/v1/files")
        assert emu.wait_for_requests(3)[0].body_size is None


def test_agent_auth_stale_per_request_header(agent: EmulatorHandle, http: httpx.Client) -> None:
    r = http.get(agent.endpoint + "/models", headers=scen("auth-stale"))
    assert r.status_code == 401 and r.json() == STALE
    assert http.get(agent.base_url + "/health", headers=scen("auth-stale")).json()["authenticated"] is False


def test_agent_passes_upstream_errors_through_verbatim(agent: EmulatorHandle, http: httpx.Client) -> None:
    r = http.post(agent.endpoint + "/chat/completions", json={**CHAT, "stream": True}, headers=scen("rate-limited"))
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"
    # the proxy drops Content-Length and streams the body back chunked
    assert r.headers["transfer-encoding"] == "chunked" and "content-length" not in r.headers
    r = http.post(agent.endpoint + "/chat/completions", json=CHAT, headers=scen("bad-gateway"))
    assert r.status_code == 502 and r.headers["content-type"] == "text/html"
    assert "<h1>502 Bad Gateway</h1>" in r.text
    r = http.post(agent.endpoint + "/chat/completions", json=CHAT, headers=scen("server-error"))
    assert r.status_code == 500 and r.json()["error"]["type"] == "server_error"
    r = http.post(agent.endpoint + "/chat/completions", json=CHAT, headers=scen("model-missing"))
    assert r.status_code == 404
    assert r.json() == {"error": {"message": "The model `hermes-4-405b` does not exist",
                                  "type": "invalid_request_error", "code": "model_not_found"}}
    for header in ("access-control-allow-origin", "x-ratelimit-limit-requests"):
        assert header not in r.headers


def test_agent_rejects_bodies_over_10_mb_with_413_text(agent: EmulatorHandle, http: httpx.Client) -> None:
    r = http.post(agent.endpoint + "/chat/completions", content=b"a" * 10_000_001,
                  headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.text == "Maximum request body size 10000000 exceeded."
    assert http.post(agent.endpoint + "/chat/completions", json=CHAT).status_code == 200  # still serving


@pytest.mark.parametrize("method,path,content,status,param,code", [
    ("POST", "/chat/completions", b"{not json", 400, None, None),
    ("POST", "/chat/completions", b"", 400, None, None),
    ("POST", "/chat/completions", b"[1, 2]", 400, None, "invalid_type"),
    ("POST", "/chat/completions", b'{"messages": []}', 400, None, None),
    ("POST", "/chat/completions", b'{"model": "m"}', 400, "messages", "missing_required_parameter"),
    ("POST", "/chat/completions", b'{"model": "m", "messages": []}', 400, "messages", "empty_array"),
    ("POST", "/chat/completions", b'{"model": "m", "messages": "hi"}', 400, "messages", "invalid_type"),
    ("POST", "/completions", b'{"model": "m"}', 400, "prompt", "missing_required_parameter"),
    ("POST", "/embeddings", b'{"model": "m"}', 400, "input", "missing_required_parameter"),
    ("GET", "/chat/completions", b"", 404, None, None),
    ("DELETE", "/models", b"", 404, None, None),
    ("POST", "/chat/completions", b"\xff\xfe\x00garbage", 400, None, None),
])
@pytest.mark.parametrize("profile", ["hermes-agent", "upstream"])
def test_bad_input_gets_openai_shaped_errors(http: httpx.Client, profile: str, method: str, path: str,
                                            content: bytes, status: int, param: str | None,
                                            code: str | None) -> None:
    with serve_emulator(profile=profile) as emu:
        r = http.request(method, emu.endpoint + path, content=content, headers={"content-type": "application/json"})
        assert r.status_code == status
        assert r.headers["content-type"] == JSON_CT
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error" and error["message"]
        assert (error["param"], error["code"]) == (param, code)
        assert http.post(emu.endpoint + "/chat/completions", json=CHAT).status_code == 200


def test_unknown_scenario_header_is_a_400(agent: EmulatorHandle, http: httpx.Client) -> None:
    r = http.post(agent.endpoint + "/chat/completions", json=CHAT, headers=scen("no-such"))
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_scenario"
    assert "no-such" in r.json()["error"]["message"]


def test_create_app_rejects_unknown_profile_and_scenario() -> None:
    with pytest.raises(ValueError, match="profile"):
        create_app(profile="nope")
    with pytest.raises(ValueError, match="scenario"):
        create_app(scenario="nope")


# --------------------------------------------------------------------------- seed profile


@pytest.mark.parametrize("auth,code", [
    (None, "missing_authorization"), ("Basic eHl6", "invalid_authorization"), ("Token abc", "invalid_authorization"),
    ("Bearer", "invalid_authorization"), ("probe", "invalid_authorization"),
])
def test_seed_requires_a_bearer(seed_emu: EmulatorHandle, http: httpx.Client, auth: str | None, code: str) -> None:
    headers = {} if auth is None else {"Authorization": auth}
    r = http.get(seed_emu.endpoint + "/models", headers=headers)
    assert r.status_code == 401 and r.headers["content-type"] == JSON_CT
    error = r.json()["error"]
    assert error["type"] == error["code"] == code


@pytest.mark.parametrize("path", ["/", "/health", "/v1/health", "/v1", "/v1/files", "/v2/models"])
def test_seed_404s_are_json_path_not_allowed(seed_emu: EmulatorHandle, http: httpx.Client, path: str) -> None:
    r = http.get(seed_emu.base_url + path, headers={"Authorization": "Bearer probe"})
    assert r.status_code == 404 and r.headers["content-type"] == JSON_CT
    assert r.json() == not_allowed(path)


def test_seed_forwards_the_four_routes_and_auth_stale(seed_emu: EmulatorHandle, http: httpx.Client) -> None:
    bearer = {"Authorization": "Bearer probe"}
    assert http.get(seed_emu.endpoint + "/models", headers=bearer).json()["object"] == "list"
    assert http.post(seed_emu.endpoint + "/chat/completions", json=CHAT, headers=bearer).status_code == 200
    assert http.post(seed_emu.endpoint + "/completions", json={"model": "m", "prompt": "p"},
                     headers=bearer).json()["object"] == "text_completion"
    assert http.post(seed_emu.endpoint + "/embeddings", json={"model": "m", "input": ["a"]},
                     headers=bearer).json()["data"][0]["object"] == "embedding"
    r = http.post(seed_emu.endpoint + "/chat/completions", json={**CHAT, "stream": True},
                  headers={**bearer, **scen("auth-stale")})
    assert r.status_code == 401 and r.headers["content-type"] == JSON_CT and r.json() == STALE
    assert r.headers["server"] == SERVER


# --------------------------------------------------------------------------- upstream profile


def test_upstream_is_plain_openai(upstream: EmulatorHandle, http: httpx.Client) -> None:
    models = http.get(upstream.endpoint + "/models").json()
    assert [m["id"] for m in models["data"]] == ["m-one", "m-two"]
    r = http.post(upstream.endpoint + "/chat/completions", json=CHAT)  # no Authorization needed
    assert r.status_code == 200 and r.headers["content-length"] == str(len(r.content))
    for path in ("/health", "/"):
        r = http.get(upstream.base_url + path)
        assert r.status_code == 404
        assert r.json()["error"] == {"message": f"Invalid URL (GET {path})", "type": "invalid_request_error",
                                     "param": None, "code": None}
    r = http.get(upstream.endpoint + "/models", headers=scen("auth-stale"))
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    r = http.post(upstream.endpoint + "/chat/completions", content=b"x" * 10_000_001)
    assert r.status_code == 400  # an upstream takes what the proxy forwards (the 10 MB cap is the proxy's)


def test_upstream_records_the_forwarded_bearer_redacted(upstream: EmulatorHandle, http: httpx.Client) -> None:
    upstream.clear()
    http.post(upstream.endpoint + "/embeddings", json={"model": "m", "input": "x"},
              headers={"Authorization": f"Bearer {CANARY}"})
    (record,) = upstream.wait_for_requests(1)
    assert record.headers["authorization"] == "Bearer <redacted>"
    assert record.json == {"model": "m", "input": "x"} and record.path == "/v1/embeddings"


# --------------------------------------------------------------------------- shapes and determinism


def test_models_embeddings_completions_shapes(agent: EmulatorHandle, http: httpx.Client) -> None:
    models = http.get(agent.endpoint + "/models").json()
    assert [m["id"] for m in models["data"]] == list(scenarios.DEFAULT_MODELS)
    assert all(m["object"] == "model" and isinstance(m["created"], int) for m in models["data"])
    emb = http.post(agent.endpoint + "/embeddings", json={"model": "m", "input": ["a", "b"]}).json()
    assert emb["object"] == "list" and [d["index"] for d in emb["data"]] == [0, 1]
    assert len(emb["data"][0]["embedding"]) == scenarios.EMBEDDING_DIM and emb["usage"]["total_tokens"] == 2
    b64 = http.post(agent.endpoint + "/embeddings",
                    json={"model": "m", "input": "a", "encoding_format": "base64"}).json()
    assert isinstance(b64["data"][0]["embedding"], str)
    comp = http.post(agent.endpoint + "/completions", json={"model": "m", "prompt": "p"}).json()
    assert comp["object"] == "text_completion" and comp["choices"][0]["finish_reason"] == "stop"
    r = http.post(agent.endpoint + "/completions", json={"model": "m", "prompt": "p", "stream": True})
    frames = [line[6:] for line in r.text.split("\n\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    text = "".join(json.loads(f)["choices"][0]["text"] for f in frames[:-1])
    assert text == comp["choices"][0]["text"]


def _stream_bytes(http: httpx.Client, emu: EmulatorHandle) -> bytes:
    return http.post(emu.endpoint + "/chat/completions", json={**CHAT, "stream": True}).content


def test_output_is_deterministic_from_the_seed(http: httpx.Client) -> None:
    with serve_emulator(seed=7) as a, serve_emulator(seed=7) as b, serve_emulator(seed=8) as c:
        first, second, other = _stream_bytes(http, a), _stream_bytes(http, b), _stream_bytes(http, c)
        chat = http.post(a.endpoint + "/chat/completions", json=CHAT).json()
        again = http.post(b.endpoint + "/chat/completions", json=CHAT).json()
    assert first == second
    assert first != other
    assert chat["created"] == scenarios.created_at(7) != scenarios.created_at(8)
    assert chat == again and chat["id"].startswith("chatcmpl-emu")
    assert chat["choices"][0]["message"]["content"] in scenarios.reply_text(7, CHAT)


# --------------------------------------------------------------------------- the proxy's own 502/504


@pytest.mark.parametrize("profile", ["hermes-agent", "seed"])
def test_proxy_scenarios_answer_the_real_proxys_own_envelopes(http: httpx.Client, profile: str) -> None:
    with serve_emulator(profile=profile) as emu:
        bearer = {"Authorization": "Bearer probe"}
        r = http.post(emu.endpoint + "/chat/completions", json={**CHAT, "stream": True},
                      headers={**bearer, **scen("upstream-unreachable")})
        assert r.status_code == 502 and r.headers["content-type"] == JSON_CT
        error = r.json()["error"]
        assert error["type"] == error["code"] == "upstream_unreachable"
        assert error["message"].startswith("upstream connection failed: Cannot connect to host ")
        r = http.get(emu.endpoint + "/models", headers={**bearer, **scen("upstream-timeout")})
        assert r.status_code == 504 and r.content == json.dumps(
            {"error": {"message": "upstream request timed out", "type": "upstream_timeout",
                       "code": "upstream_timeout"}}).encode()
        # the body is read before the upstream is called: an oversized body is still a 413
        r = http.post(emu.endpoint + "/chat/completions", content=b"a" * 10_000_001,
                      headers={**bearer, **scen("upstream-unreachable")})
        assert r.status_code == 413


def test_proxy_scenarios_are_refused_by_the_upstream_profile(upstream: EmulatorHandle, http: httpx.Client) -> None:
    r = http.get(upstream.endpoint + "/models", headers=scen("upstream-timeout"))
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_scenario"
    with pytest.raises(ValueError, match="upstream profile"):
        create_app(profile="upstream", scenario="upstream-unreachable")
