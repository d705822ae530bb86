"""Findings from trials against a live proxy: what the operator is told.

- live receipts name the release under test (``/health``, else the recorded releases the proxy behaves as), never
  the version of a ``hermes`` that happens to be installed here;
- the human smoke output lists the fields that drifted;
- an endpoint that names a route (``…/v1/chat/completions``) is told to end at ``/v1``;
- an unreachable proxy's hint names ``hermes auth`` (a logged-out proxy refuses to start: tests/rig/test_rig.py).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from hermes_nb import HermesProxyRuntimeConfig, check
from hermes_nb.cli import main
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.app import _ServerThread
from hermes_nb.target import identify
from tests.helpers import ROOT

HERMES_BIN = ROOT / ".venv-hermes" / "bin" / "hermes"


@pytest.fixture
def health_server() -> Iterator[str]:
    """A loopback server whose ``/health`` reports a version (as a future proxy might)."""
    app = web.Application()

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "upstream": "Nous Portal", "authenticated": True,
                                  "version": "0.20.1"})

    app.router.add_get("/health", health)
    sock = socket.create_server(("127.0.0.1", 0))
    thread = _ServerThread(app, sock)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        thread.shutdown()


# --------------------------------------------------------------------------- hermes-agent version


def test_the_release_comes_from_the_proxy_never_from_a_local_install(health_server: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    found = identify(HermesProxyRuntimeConfig(endpoint=health_server, model="m"))
    assert (found.release, found.release_source) == ("0.20.1", "/health")
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))  # a hermes installed beside the project
    with serve_emulator(profile="hermes-agent") as emu:  # /health without a version, like every release so far
        found = identify(HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="m"))
    assert (found.release, found.release_source) == ("unknown", None)
    # nothing listening: still an answer, never an exception
    assert identify(HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:1/v1", model="m")).release == "unknown"


# --------------------------------------------------------------------------- smoke lists drifted fields


def test_human_smoke_output_lists_the_drifted_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the seed profile breaks the 0.19.0 contract on bearer handling (and more): drift the operator must see
    with serve_emulator(profile="seed") as emu:
        code = main(["smoke", "--endpoint", emu.endpoint, "--only", "wire_format_spike", "--out", str(tmp_path),
                     "--contract", "hermes-agent-0.19.0", "--no-html"])
    out = capsys.readouterr().out
    assert code == 1
    assert "  drift: bearer_required: False → True" in out.splitlines()


# --------------------------------------------------------------------------- wrong endpoint path


def test_endpoint_naming_a_route_is_told_to_end_at_v1() -> None:
    with serve_emulator(profile="hermes-agent") as emu:
        result = check(HermesProxyRuntimeConfig(endpoint=f"{emu.endpoint}/chat/completions", model="m"))
    assert result.state == "misconfigured"
    text = " ".join(result.errors) + " " + (result.hint or "")
    assert "does not forward /models" not in text
    assert "the endpoint names a route, it should end at /v1" in text and f"{emu.endpoint}/chat/completions" in text


def test_a_path_not_allowed_on_models_at_v1_still_names_the_version() -> None:
    import httpx

    def refuse(request: httpx.Request) -> httpx.Response:  # a proxy (ending at /v1) that does not forward /models
        return httpx.Response(404, json={"error": {"message": "Path /v1/models is not forwarded by this proxy.",
                                                   "type": "path_not_allowed", "code": "path_not_allowed"}})

    result = check(HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:8645/v1", model="m"),
                           transport=httpx.MockTransport(refuse))
    assert result.state == "misconfigured" and "Path /v1/models is not forwarded" in result.errors[0]
    assert "this hermes release forwards the route" in (result.hint or "")


# --------------------------------------------------------------------------- unreachable


def test_unreachable_hints_mention_hermes_auth(capsys: pytest.CaptureFixture[str]) -> None:
    result = check(HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:1/v1", model="m"))
    assert result.state == "unreachable" and "hermes auth" in (result.hint or "")
    assert main(["probe", "--endpoint", "http://127.0.0.1:1/v1", "--budget-s", "3"]) == 3
    assert "hermes auth" in capsys.readouterr().out
