"""Findings from trials against a live proxy (issue 10): what the operator is told.

- live receipts name the hermes-agent version (``/health``, else the local ``hermes``), "unknown" otherwise;
- the human smoke output lists the fields that drifted;
- an endpoint that names a route (``…/v1/chat/completions``) is told to end at ``/v1``;
- a proxy that refuses to start because it is logged out points at ``hermes auth``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from hermes_nb import HermesProxyRuntimeConfig, RigError, check
from hermes_nb.cli import main
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.server import _ServerThread
from hermes_nb.proxy import executable
from hermes_nb.proxy.executable import INSTALL_HINT, find_hermes_bin
from hermes_nb.proxy.rig import real_proxy
from hermes_nb.target import identify
from tests.helpers import ROOT

HERMES_BIN = find_hermes_bin()
LLMOCK = ROOT / ".venv-upstream" / "bin" / "llmock"
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason=INSTALL_HINT)


@pytest.fixture
def health_server() -> Iterator[str]:
    """A loopback server whose ``/health`` reports a version (as a future proxy might)."""
    app = web.Application()

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "upstream": "Nous Portal", "authenticated": True,
                                  "version": "0.20.1"})

    app.router.add_get("/health", health)
    thread = _ServerThread(app, "127.0.0.1", 0)
    thread.start()
    assert thread.ready.wait(10)
    try:
        yield f"http://127.0.0.1:{thread.bound_port}/v1"
    finally:
        thread.shutdown()


# --------------------------------------------------------------------------- hermes-agent version


def _release(endpoint: str) -> tuple[str, str | None]:
    target = identify(resolve_runtime_config(environ={}, endpoint=endpoint))
    return target.release, target.release_source


def test_a_version_the_proxy_reports_is_the_release_under_test(health_server: str) -> None:
    assert _release(health_server) == ("0.20.1", "/health")


def test_otherwise_the_release_is_unknown_never_a_local_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    if HERMES_BIN is not None:
        monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))  # an install beside the project says nothing
    with serve_emulator(profile="hermes-agent") as emu:  # /health without a version, like every release so far
        assert _release(emu.endpoint) == ("unknown", None)
    assert _release("http://127.0.0.1:1/v1") == ("unknown", None)  # nothing listening: an answer, no exception


@pytest.mark.real_proxy
@needs_hermes
def test_live_receipt_says_unknown_rather_than_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    if not LLMOCK.exists():
        pytest.skip("llmock is not installed: make upstream-venv")
    # an upstream that is not hermes_nb's emulator, so the target counts as live
    command = f"{LLMOCK} serve --host 127.0.0.1 --port {{port}} --latency-ms 0"
    with real_proxy("live", hermes_bin=HERMES_BIN, upstream=command) as rig:
        monkeypatch.setattr(executable, "find_hermes_bin", lambda explicit=None: None)
        code = main(["smoke", "--endpoint", rig.endpoint, "--model", "gpt-4o", "--only", "wire_format_spike",
                     "--out", str(tmp_path), "--no-html", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["target_kind"] == "live"
    sidecar = Path(summary["receipts"][0]["path"]).with_suffix(".receipt.json")
    meta = json.loads(sidecar.read_text("utf-8"))
    assert meta["receipt"]["hermes_agent_version"] == "unknown"


# --------------------------------------------------------------------------- smoke lists drifted fields


def test_human_smoke_output_lists_the_drifted_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the seed profile breaks the 0.19.0 contract on bearer handling (and more): drift the operator must see
    with serve_emulator(profile="seed") as emu:
        code = main(["smoke", "--endpoint", emu.endpoint, "--only", "wire_format_spike", "--out", str(tmp_path),
                     "--no-html"])
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
    assert "end at /v1" in text and f"{emu.endpoint}" in (result.hint or "")


def test_a_path_not_allowed_on_models_at_v1_still_names_the_version() -> None:
    import httpx

    def refuse(request: httpx.Request) -> httpx.Response:  # a proxy (ending at /v1) that does not forward /models
        return httpx.Response(404, json={"error": {"message": "Path /v1/models is not forwarded by this proxy.",
                                                   "type": "path_not_allowed", "code": "path_not_allowed"}})

    result = check(HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:8645/v1", model="m"),
                           transport=httpx.MockTransport(refuse))
    assert result.state == "misconfigured" and "does not forward /models" in result.errors[0]


# --------------------------------------------------------------------------- logged out


@pytest.mark.real_proxy
@needs_hermes
@pytest.mark.parametrize(("provider", "login", "other"), [
    ("nous", "hermes auth add nous", "xai-oauth"),
    ("xai", "hermes auth add xai-oauth --type oauth", "auth add nous"),
])
def test_logged_out_rig_points_at_hermes_auth_before_proxy_start(provider: str, login: str, other: str) -> None:
    """The provider's own log-in command, never another provider's (issue 18: xai was told `auth add nous`)."""
    with pytest.raises(RigError) as info, real_proxy("logged-out", provider=provider, hermes_bin=HERMES_BIN):
        pytest.fail("the logged-out proxy must not start")
    assert f"run `{login}` (see `hermes auth`) before `hermes proxy start --provider {provider}`" in str(info.value)
    assert other not in str(info.value)


def test_unreachable_hints_mention_hermes_auth(capsys: pytest.CaptureFixture[str]) -> None:
    result = check(HermesProxyRuntimeConfig(endpoint="http://127.0.0.1:1/v1", model="m"))
    assert result.state == "unreachable" and "hermes auth" in (result.hint or "")
    assert main(["probe", "--endpoint", "http://127.0.0.1:1/v1", "--budget-s", "3"]) == 3
    assert "hermes auth" in capsys.readouterr().out
