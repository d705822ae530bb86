"""The real-proxy rig: hermes lookup, version, auth states, start/stop, redaction, CLI."""

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

from hermes_nb import RigError
from hermes_nb.core.redaction import auth_store_secrets
from hermes_nb.proxy import executable as hermes_bin
from hermes_nb.proxy import rig

#: read at collection, before the autouse fixture clears HERMES_* (HERMES_NB_HERMES_BIN included)
HERMES_BIN = rig.find_hermes_bin()
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason=rig.INSTALL_HINT)


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
    env = {rig.ENV_HERMES_BIN: str(from_env), "PATH": str(on_path.parent)}
    assert rig.find_hermes_bin(explicit, environ=env, search_dirs=[repo]) == explicit
    assert rig.find_hermes_bin(None, environ=env, search_dirs=[repo]) == from_env
    env.pop(rig.ENV_HERMES_BIN)
    assert rig.find_hermes_bin(None, environ=env, search_dirs=[repo]) == in_repo
    in_repo.unlink()
    assert rig.find_hermes_bin(None, environ=env, search_dirs=[repo]) == on_path


def test_lookup_none_found_and_bad_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert rig.find_hermes_bin(None, environ={"PATH": str(tmp_path)}, search_dirs=[tmp_path]) is None
    with pytest.raises(RigError, match="not an executable"):
        rig.find_hermes_bin(tmp_path / "missing")
    with pytest.raises(RigError, match="HERMES_NB_HERMES_BIN"):
        rig.find_hermes_bin(None, environ={rig.ENV_HERMES_BIN: str(tmp_path)})


def test_no_hermes_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hermes_bin, "find_hermes_bin", lambda explicit=None: None)
    with pytest.raises(RigError, match="make rig-venv") as info, rig.real_proxy("stale"):
        pass
    assert info.value.exit_code == 3


def test_relative_explicit_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _exe(tmp_path / "bin" / "hermes")
    monkeypatch.chdir(tmp_path)
    assert rig.find_hermes_bin("bin/hermes") == tmp_path / "bin" / "hermes"


# --------------------------------------------------------------------------- version


def test_version_from_dist_info(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    binary = _exe(venv / "bin" / "hermes")
    dist_info = venv / "lib" / "python3.11" / "site-packages" / "hermes_agent-0.17.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-agent\nVersion: 0.17.0\n")
    assert rig.hermes_version(binary) == "0.17.0"


def test_version_from_cli_first_line_without_waiting_for_update_check(tmp_path: Path) -> None:
    # prints the banner line, then "checks for updates" forever: the rig must not wait for it
    script = "#!/bin/sh\necho 'Hermes Agent v9.8.7 (2026.1.1)'\nexec sleep 600\n"
    binary = _exe(tmp_path / "venv" / "bin" / "hermes", script)
    assert rig.hermes_version(binary) == "9.8.7"


def test_version_from_a_cli_that_never_ends_its_line_is_bounded(tmp_path: Path) -> None:
    # a partial line, then a child that keeps the pipe open: readline alone would block for ever
    script = "#!/bin/sh\nprintf 'Hermes Agent'\nsleep 600\n"
    binary = _exe(tmp_path / "venv" / "bin" / "hermes", script)
    assert rig.hermes_version(binary, timeout_s=0.3) is None


def test_live_refused_for_a_proxy_that_ignores_the_inference_override(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    binary = _exe(venv / "bin" / "hermes", "#!/bin/sh\necho started >> \"$0.ran\"\nexec sleep 600\n")
    site = venv / "lib" / "python3.11" / "site-packages"
    adapter = site / "hermes_cli" / "proxy" / "adapters" / "nous_portal.py"
    adapter.parent.mkdir(parents=True)
    adapter.write_text("base_url = _validate_nous_inference_url_from_network(x) or DEFAULT\n")
    (site / "hermes_agent-0.16.0.dist-info").mkdir()
    assert rig.live_supported(binary) is False
    with pytest.raises(RigError, match="ignores NOUS_INFERENCE_BASE_URL"):
        with rig.real_proxy("live", hermes_bin=binary):
            pytest.fail("must refuse before starting anything")
    assert not Path(f"{binary}.ran").exists()
    adapter.write_text("base_url = _nous_inference_env_override() or x\n")
    assert rig.live_supported(binary) is True
    assert rig.live_supported(tmp_path / "elsewhere" / "bin" / "hermes") is None


@needs_hermes
def test_version_of_the_real_hermes() -> None:
    version = rig.hermes_version(HERMES_BIN)
    assert version is not None and version[0].isdigit()


# --------------------------------------------------------------------------- auth store + env


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_auth_store_documents() -> None:
    assert rig.auth_store_document("logged-out") is None
    stale = rig.auth_store_document("stale")["providers"]["nous"]
    assert stale["access_token"] and stale["refresh_token"] and stale["access_token"].count(".") != 2
    live_doc = rig.auth_store_document("live")
    live = live_doc["providers"]["nous"]
    claims = _claims(live["access_token"])
    assert claims["scope"] == "inference:invoke" and live["scope"] == "inference:invoke"
    assert claims["exp"] > claims["iat"]
    assert live_doc["version"] == 1
    # every token is known to the redactor's helper
    assert live["access_token"] in auth_store_secrets(live_doc)
    assert rig.auth_store_document("live")["providers"]["nous"]["access_token"] != live["access_token"]
    with pytest.raises(RigError, match="unknown rig state"):
        rig.auth_store_document("bogus")


def test_child_environment_is_minimal_and_throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-do-not-pass-1234")
    env = rig.child_environment(tmp_path, portal_url="http://127.0.0.1:9", inference_url="http://127.0.0.1:8/v1")
    assert set(env) == {"PATH", "LANG", "LC_ALL", "PYTHONUNBUFFERED", "HOME", "HERMES_HOME",
                        "HERMES_SHARED_AUTH_DIR", "HERMES_PORTAL_BASE_URL", "TMPDIR", "NOUS_INFERENCE_BASE_URL"}
    for key in ("HOME", "HERMES_HOME", "HERMES_SHARED_AUTH_DIR", "TMPDIR"):
        assert Path(env[key]).is_relative_to(tmp_path)
    assert "NOUS_INFERENCE_BASE_URL" not in rig.child_environment(tmp_path, portal_url="http://127.0.0.1:9")


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
def test_live_rig_forwards_to_the_upstream_with_its_own_credential() -> None:
    with rig.real_proxy("live", hermes_bin=HERMES_BIN) as handle:
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
    assert handle.process.poll() is not None


@pytest.mark.real_proxy
@needs_hermes
def test_client_canary_never_reaches_rig_log_upstream_record_or_exchange() -> None:
    from hermes_nb import HermesClient, HermesProxyRuntimeConfig

    token, extra = "sk-canary-rig-token-0a1b2c3d", "sk-canary-rig-extra-4e5f6a7b"
    with rig.real_proxy("live", hermes_bin=HERMES_BIN) as handle:
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
        hermes_bin.stop_process(proc)
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


# --------------------------------------------------------------------------- bad arguments


def test_bad_upstream_scenario_and_deadline_are_usage_errors_before_anything_starts(tmp_path: Path) -> None:
    from hermes_nb import UsageError

    missing = tmp_path / "no-hermes-here"  # would be a RigError if the lookup ran first
    with pytest.raises(UsageError, match="unknown upstream scenario 'bogus'"):
        with rig.real_proxy("live", upstream_scenario="bogus", hermes_bin=missing):
            pass
    with pytest.raises(UsageError, match="deadline_s must be > 0"):
        with rig.real_proxy("stale", deadline_s=0, hermes_bin=missing):
            pass


@pytest.mark.parametrize("argv,needle", [
    (["rig", "--state", "live", "--scenario", "bogus"], "invalid choice: 'bogus'"),
    (["rig", "--state", "stale", "--budget-s", "0"], "--deadline must be > 0"),
    (["rig", "--port", "70000"], "--port must be 0..65535"),
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
    (venv / "lib" / "python3.11" / "site-packages" / "hermes_agent-0.19.0.dist-info").mkdir(parents=True)
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
    proc = subprocess.Popen(_cli("rig", "--state", "stale", "--hermes-bin", str(binary), "--budget-s", "60"),
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
        hermes_bin.stop_process(proc)
    with pytest.raises(ProcessLookupError):  # stopped and reaped by the rig, not orphaned
        os.kill(int(pid_text), 0)
    assert not Path(hermes_home).parent.exists()


# --------------------------------------------------------------------------- the xai provider (issue 18)


def test_xai_auth_store_documents_a_pooled_credential_pointing_at_the_upstream() -> None:
    live_doc = rig.auth_store_document("live", provider="xai", base_url="http://127.0.0.1:4321/v1")
    entry, = live_doc["credential_pool"]["xai-oauth"]
    assert entry["base_url"] == "http://127.0.0.1:4321/v1" and entry["auth_type"] == "oauth"
    assert _claims(entry["access_token"])["exp"] > _claims(entry["access_token"])["iat"] + 3_600  # no refresh due
    stale, = rig.auth_store_document("stale", provider="xai")["credential_pool"]["xai-oauth"]
    assert _claims(stale["access_token"])["exp"] < _claims(stale["access_token"])["iat"]  # expired: must refresh
    secrets = auth_store_secrets(live_doc)
    assert entry["access_token"] in secrets and entry["refresh_token"] in secrets
    assert rig.auth_store_document("logged-out", provider="xai") is None
    with pytest.raises(RigError, match="unknown rig provider"):
        rig.auth_store_document("live", provider="claude")


def test_the_egress_sink_records_and_refuses(tmp_path: Path) -> None:
    from hermes_nb.proxy.egress import EgressSink, proxy_environment

    with EgressSink() as sink:
        env = proxy_environment(sink.url)
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
    assert rig.live_supported(binary, "xai") is False
    adapter.write_text("base_url = getattr(entry, 'runtime_base_url', None) or DEFAULT\n")
    assert rig.live_supported(binary, "xai") is True


@pytest.mark.real_proxy
@needs_hermes
def test_xai_live_rig_forwards_responses_to_the_pools_base_url_with_its_credential() -> None:
    with rig.real_proxy("live", provider="xai", hermes_bin=HERMES_BIN) as handle:
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
def test_xai_stale_rig_refresh_fails_locally_at_the_egress_sink() -> None:
    with rig.real_proxy("stale", provider="xai", hermes_bin=HERMES_BIN) as handle:
        resp = httpx.get(handle.endpoint + "/models", trust_env=False, timeout=30)
        envelope = resp.json()["error"]
        assert resp.status_code == 401 and envelope["type"] == "upstream_auth_failed"
        assert "hermes auth reset xai-oauth" in envelope["message"]
        attempts = handle.egress
    assert attempts and all(a.startswith("CONNECT auth.x.ai:443 ") for a in attempts), attempts


@pytest.mark.real_proxy
@needs_hermes
def test_xai_stale_check_is_locked_and_smoke_blocked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the check hinted `hermes auth status nous`, the smoke exited 1 with 8 drift lines."""
    from hermes_nb.cli import main

    with rig.real_proxy("stale", provider="xai", hermes_bin=HERMES_BIN) as handle:
        code = main(["check", "--endpoint", handle.endpoint, "--json"])
        check = json.loads(capsys.readouterr().out)
        done = subprocess.run(_cli("smoke", "--endpoint", handle.endpoint, "--out", str(tmp_path), "--no-html",
                                   "--json"), capture_output=True, text=True, timeout=600)
        smoke, summary = done.returncode, json.loads(done.stdout)
    assert code == 3 and check["state"] == "locked" and check["provider"] == "xai"
    assert "hermes auth add xai-oauth --type oauth" in check["hint"] and "nous" not in check["hint"]
    assert smoke == 3 and summary["verdict"] == "blocked" and summary["provider"] == "xai"
    # the spike matches the stale xai contract (as nous' stale spike matches nous'); the other two need the operator
    assert [r["verdict"] for r in summary["receipts"]] == ["passed", "blocked", "blocked"]
    assert all("nous" not in json.dumps(r) for r in summary["receipts"])


@pytest.mark.real_proxy
@needs_hermes
def test_cli_rig_provider_xai_logged_out_exits_3_with_the_xai_command() -> None:
    done = subprocess.run(_cli("rig", "--provider", "xai", "--state", "logged-out", "--hermes-bin", str(HERMES_BIN),
                               "--json"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    error = json.loads(done.stdout)["error"]
    assert "Not logged into xAI Grok OAuth" in error and "hermes auth add xai-oauth --type oauth" in error
    assert "auth add nous" not in error


@pytest.mark.real_proxy
@needs_hermes
def test_smoke_rig_provider_xai(tmp_path: Path) -> None:
    done = subprocess.run(_cli("smoke", "--rig", "live", "--provider", "xai", "--out", str(tmp_path), "--no-html",
                               "--json"), capture_output=True, text=True, timeout=600)
    code, summary = done.returncode, json.loads(done.stdout)
    assert code == 0 and summary["target_kind"] == "rig" and summary["provider"] == "xai", summary
    assert [r["verdict"] for r in summary["receipts"]] == ["passed"] * 3  # no model given: xai's default, listed
