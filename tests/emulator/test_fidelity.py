"""Differential fidelity: the ``hermes-agent`` profile answers byte for byte like the real proxy.

The real ``hermes proxy`` (hermes-agent from .venv-hermes, via ``hermes_nb.rig.rig``) runs in its ``live``
state in front of the emulator's ``upstream`` profile; the same requests go to the emulator's
``hermes-agent`` profile. Status, headers (except Date), body bytes and the way the body ends must match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from hermes_nb.emulator import SCENARIO_HEADER, SCENARIOS, EmulatorHandle, serve_emulator
from hermes_nb.rig import executable, rig
from hermes_nb.rig.rig import RigHandle

HERMES_BIN = executable.find_hermes_bin()
pytestmark = [pytest.mark.real_proxy, pytest.mark.skipif(HERMES_BIN is None, reason=executable.INSTALL_HINT)]

CHAT = {"model": "hermes-4-405b", "messages": [{"role": "user", "content": "hi"}]}


def observe(base_url: str, method: str, path: str, *, body: Any = None, content: bytes | None = None,
            scenario: str = "ok") -> dict[str, Any]:
    """Everything a client can see of one exchange, minus the Date header."""
    headers = {SCENARIO_HEADER: scenario, "Authorization": "Bearer probe"}
    seen: dict[str, Any] = {}
    # a stall is this much silence (the stall scenario's never ends: 1 s shows it as well as more)
    silence_s = 1.0 if scenario == "stall" else 2.0
    with httpx.Client(trust_env=False, timeout=httpx.Timeout(10, read=silence_s)) as client:
        with client.stream(method, base_url + path, json=body, content=content, headers=headers) as r:
            seen["status"] = r.status_code
            seen["headers"] = sorted((k, v) for k, v in r.headers.items() if k != "date")
            data = b""
            try:
                for chunk in r.iter_raw():
                    data += chunk
            except httpx.TransportError as exc:
                seen["error"] = type(exc).__name__
            seen["body"] = data
    return seen


@pytest.fixture(scope="module")
def pair(shared_rig: Callable[..., RigHandle]) -> Iterator[tuple[str, EmulatorHandle]]:
    with serve_emulator(profile="hermes-agent") as emu:  # the session's live rig (its stalls end with its upstream)
        yield shared_rig("0.19", "live").base_url, emu


CASES: list[tuple[str, str, str, Any]] = [
    (s, "POST", "/v1/chat/completions", {**CHAT, "stream": stream})
    for s in SCENARIOS if s != "auth-stale" for stream in (True, False)
] + [
    ("ok", "GET", "/v1/models", None),
    ("empty", "GET", "/v1/models", None),
    ("ok", "POST", "/v1/embeddings", {"model": "m", "input": ["a"], "encoding_format": "base64"}),
    ("ok", "POST", "/v1/completions", {"model": "m", "prompt": "p", "stream": True}),
    ("ok", "GET", "/v1/chat/completions", None),
    ("ok", "POST", "/v1/chat/completions", {"model": "m"}),
    ("ok", "GET", "/v1/responses", None),
    ("ok", "GET", "/v1/", None),
    ("ok", "GET", "/", None),
    ("ok", "GET", "/v1", None),
    ("ok", "GET", "/health", None),
    ("ok", "POST", "/health", None),
]


@pytest.mark.parametrize("scenario,method,path,body", CASES,
                         ids=[f"{m} {p} {s}{' stream' if b and b.get('stream') else ''}" for s, m, p, b in CASES])
def test_same_answer_as_the_real_proxy(pair: tuple[str, EmulatorHandle], scenario: str, method: str, path: str,
                                       body: Any) -> None:
    real, emu = pair
    assert observe(emu.base_url, method, path, body=body, scenario=scenario) == \
        observe(real, method, path, body=body, scenario=scenario)


def test_same_413_and_malformed_body(pair: tuple[str, EmulatorHandle]) -> None:
    real, emu = pair
    for content in (b"x" * 10_000_001, b"{not json"):
        assert observe(emu.base_url, "POST", "/v1/chat/completions", content=content) == \
            observe(real, "POST", "/v1/chat/completions", content=content)


def test_auth_stale_has_the_real_envelope_shape(shared_rig: Callable[..., RigHandle]) -> None:
    real = shared_rig("0.19", "stale")
    with serve_emulator(scenario="auth-stale") as emu:
        for path, body in (("/v1/models", None), ("/v1/chat/completions", {**CHAT, "stream": True})):
            method = "POST" if body else "GET"
            mine = observe(emu.base_url, method, path, body=body, scenario="auth-stale")
            theirs = observe(real.base_url, method, path, body=body)
            assert mine["status"] == theirs["status"] == 401
            assert dict(mine["headers"])["content-type"] == dict(theirs["headers"])["content-type"]
            for seen in (mine, theirs):
                error = httpx.Response(200, content=seen["body"]).json()["error"]
                assert error["type"] == error["code"] == "upstream_auth_failed"
                assert error["message"].startswith("Failed to refresh Nous Portal credentials: ")


def test_upstream_unreachable_has_the_real_envelope_shape() -> None:
    with rig.real_proxy("live", hermes_bin=HERMES_BIN) as real, serve_emulator(scenario="upstream-unreachable") as emu:
        real.upstream.close()  # nothing listens behind the real proxy any more
        mine = observe(emu.base_url, "POST", "/v1/chat/completions", body={**CHAT, "stream": True},
                       scenario="upstream-unreachable")
        theirs = observe(real.base_url, "POST", "/v1/chat/completions", body={**CHAT, "stream": True})
    assert mine["status"] == theirs["status"] == 502
    assert dict(mine["headers"])["content-type"] == dict(theirs["headers"])["content-type"]
    for seen in (mine, theirs):
        error = httpx.Response(200, content=seen["body"]).json()["error"]
        assert error["type"] == error["code"] == "upstream_unreachable"
        assert error["message"].startswith("upstream connection failed: Cannot connect to host ")
        assert "ssl:default [Connect call failed" in error["message"]
