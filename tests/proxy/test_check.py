"""Adapter check: state mapping over loopback, config first, hermes version, and `hermes-nb check`."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hermes_nb import CheckResult, check
from hermes_nb.cli import main
from hermes_nb.core.config import validate_config
from hermes_nb.core.facts import MINIMUM_HERMES_PROXY_VERSION
from hermes_nb.core.manifest import manifest_template
from hermes_nb.emulator import serve_emulator
from hermes_nb.proxy.contracts import version_key
from tests.helpers import free_port, no_dns

CANARY = "sk-canary-check-0123456789abcdef"


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    with serve_emulator(scenario="ok") as handle:
        yield handle


class _Canned(BaseHTTPRequestHandler):
    reply: tuple[int, str, bytes] = (200, "text/html", b"<html>hello</html>")
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        status, ctype, body = self.reply
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def canned() -> Iterator[Any]:
    handler = type("Handler", (_Canned,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def cfg(endpoint: str, scenario: str = "ok", **extra: Any) -> Any:
    return validate_config({"endpoint": endpoint, "model": "nousresearch/hermes-4-405b", "auth_token": CANARY,
                            "extra_headers": {"x-hermes-emulator-scenario": scenario}, **extra})


def test_ready_lists_models_with_bearer_and_extra_headers(emu: Any) -> None:
    emu.clear()
    result = check(cfg(emu.endpoint))
    assert (result.state, result.available) == ("ready", True)
    assert "nousresearch/hermes-4-405b" in result.models and result.warnings == []
    sent = emu.requests[-1]
    assert sent.method == "GET" and sent.path == "/v1/models"
    assert sent.headers["authorization"].startswith("Bearer ") and CANARY not in json.dumps(sent.headers)
    assert sent.headers["x-hermes-emulator-scenario"] == "ok"
    assert CANARY not in result.model_dump_json()


def test_a_model_the_proxy_does_not_list_is_not_ready(emu: Any) -> None:
    result = check(cfg(emu.endpoint, model="no-such-model"))
    assert (result.state, result.available, result.verdict) == ("misconfigured", False, "failed")
    assert "'no-such-model' is not in the proxy's model list" in result.errors[0]
    assert "nousresearch/hermes-4-405b" in result.errors[0]  # the models listed are named
    assert result.hint is not None and "model" in result.hint


def test_an_empty_model_list_is_ready_with_a_warning(emu: Any) -> None:
    result = check(cfg(emu.endpoint, "empty", model="anything"))
    assert result.state == "ready" and result.models == []
    assert "lists no models" in result.warnings[0]


def test_locked_on_upstream_auth_failure(emu: Any) -> None:
    result = check(cfg(emu.endpoint, "auth-stale", provider="nous"))
    assert (result.state, result.available, result.http_status) == ("locked", False, 401)
    assert "configured but locked" in result.errors[0]
    assert result.hint is not None and "hermes auth status nous" in result.hint


def test_path_not_allowed_is_misconfigured(emu: Any) -> None:
    result = check(cfg(emu.endpoint + "/extra"))
    assert result.state == "misconfigured" and "path_not_allowed" in result.errors[0]


def test_text_plain_404_means_missing_v1(emu: Any) -> None:
    result = check(cfg(emu.base_url))
    assert result.state == "misconfigured" and result.hint is not None and "/v1" in result.hint


def test_other_status_is_error_with_excerpt(emu: Any) -> None:
    result = check(cfg(emu.endpoint, "bad-gateway"))
    assert result.state == "error" and "HTTP 502" in result.errors[0] and "Bad Gateway" in result.errors[0]
    assert "\n" not in result.errors[0] and "\r" not in result.errors[0]


def test_html_200_from_another_server_is_error(canned: Any) -> None:
    endpoint = f"http://127.0.0.1:{canned.server_address[1]}/v1"
    result = check(cfg(endpoint))
    assert result.state == "error" and not result.available
    assert "not a model list" in result.errors[0] and "<html>hello</html>" in result.errors[0]


def test_error_body_with_secret_shapes_is_redacted(canned: Any) -> None:
    body = f"upstream said: key sk-leaked-0123456789abcdef, Bearer abcdefghijkl0123, token {CANARY}"
    canned.RequestHandlerClass.reply = (500, "text/plain", body.encode())
    result = check(cfg(f"http://127.0.0.1:{canned.server_address[1]}/v1"))
    assert result.state == "error" and "upstream said" in result.errors[0]
    dumped = result.model_dump_json()
    assert "sk-leaked" not in dumped and "abcdefghijkl0123" not in dumped and CANARY not in dumped


def test_403_is_locked(canned: Any) -> None:
    canned.RequestHandlerClass.reply = (403, "application/json", b'{"error": {"message": "forbidden"}}')
    result = check(cfg(f"http://127.0.0.1:{canned.server_address[1]}/v1"))
    assert result.state == "locked" and "HTTP 403" in result.errors[0]


def test_refused_is_unreachable_with_start_hint() -> None:
    result = check(cfg(f"http://127.0.0.1:{free_port()}/v1"))
    assert result.state == "unreachable" and result.hint is not None and "hermes proxy start" in result.hint


def test_silent_server_times_out_within_one_deadline() -> None:
    with socket.socket() as listener:  # accepts (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        result = check(cfg(f"http://127.0.0.1:{listener.getsockname()[1]}/v1"), budget_s=0.3)
    assert result.state == "unreachable" and "in time" in result.errors[0]


def test_dns_failure_is_misconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    no_dns(monkeypatch)
    result = check(cfg("http://no-such-host.invalid:8645/v1"))
    assert result.state == "misconfigured" and "cannot resolve" in result.errors[0]


def test_invalid_config_sends_nothing(emu: Any) -> None:
    emu.clear()
    result = check({"endpoint": emu.endpoint, "model": "m", "temprature": 1})
    assert result.state == "misconfigured" and "temprature" in result.errors[0]
    assert emu.requests == []


def test_manifest_accepted(emu: Any) -> None:
    assert check(manifest_template(endpoint=emu.endpoint)).state == "ready"


def fake_hermes(tmp_path: Path, version: str) -> Path:
    path = tmp_path / "bin" / "hermes"
    path.parent.mkdir(parents=True)
    path.write_text(f"#!/bin/sh\necho 'Hermes Agent v{version} (fake)'\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("version, warns", [("0.15.2", True), (MINIMUM_HERMES_PROXY_VERSION, False),
                                            ("0.22.2.post1", False)])
def test_the_release_is_the_named_executables_and_never_a_local_installs(emu: Any, tmp_path: Path, version: str,
                                                                        warns: bool, monkeypatch: Any) -> None:
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(fake_hermes(tmp_path, "0.19.0")))  # an unrelated local install
    assert check(cfg(emu.endpoint)).release == "unknown"
    named = fake_hermes(tmp_path / "named", version)
    result = check(cfg(emu.endpoint), hermes_bin=str(named))
    assert (result.release, result.release_source) == (version, f"--hermes-bin {named} (package unknown)")
    assert any(f"older than {MINIMUM_HERMES_PROXY_VERSION}" in w for w in result.warnings) is warns


def test_version_key_orders_post_releases() -> None:
    assert version_key("0.22.2.post1") == (0, 22, 2, 1) and version_key("1.2") == (1, 2)
    assert version_key("0.22.2.post1") > version_key("0.22.2") > version_key("0.21.5.post2")


# --------------------------------------------------------------------------- CLI

@pytest.mark.parametrize("scenario, endpoint_kind, code, tag", [
    ("ok", "v1", 0, "[READY]"),
    ("auth-stale", "v1", 3, "[LOCKED]"),
    ("ok", "root", 2, "[MISCONFIGURED]"),
    ("bad-gateway", "v1", 1, "[ERROR]"),
])
def test_cli_check_states(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any, scenario: str,
                          endpoint_kind: str, code: int, tag: str) -> None:
    endpoint = emu.endpoint if endpoint_kind == "v1" else emu.base_url
    argv = ["check", "--root", str(tmp_path), "--endpoint", endpoint,
            "--runtime-config-overrides", json.dumps({"extra_headers": {"x-hermes-emulator-scenario": scenario}})]
    assert main(argv) == code
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(tag)
    assert main([*argv, "--json"]) == code
    doc = json.loads(capsys.readouterr().out)
    assert CheckResult.model_validate(doc).state == tag.strip("[]").lower()


def test_cli_check_unreachable_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["check", "--json", "--root", str(tmp_path), "--endpoint", f"http://127.0.0.1:{free_port()}/v1"]) == 3
    assert json.loads(capsys.readouterr().out)["state"] == "unreachable"


def test_cli_check_reads_manifest_under_root(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 0
    capsys.readouterr()
    path = tmp_path / ".harness" / "adapters" / "hermes-proxy.yaml"
    path.write_text(path.read_text().replace("http://127.0.0.1:8645/v1", emu.endpoint))
    assert main(["check", "--json", "--root", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["endpoint"] == emu.endpoint


@pytest.mark.parametrize("argv, needle", [
    (["--endpoint", "nope"], "endpoint"),
    (["--runtime-config-overrides", "[]"], "must be a JSON object"),
    (["--runtime-config-overrides", '{"stream": true, "modle": "x"}'], "unknown key 'modle'"),
])
def test_cli_check_bad_config_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
                                     needle: str) -> None:
    assert main(["check", "--json", "--root", str(tmp_path), *argv]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["state"] == "misconfigured" and needle in doc["errors"][0]


def test_cli_check_env_endpoint(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_ENDPOINT", emu.endpoint)
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", CANARY)
    assert main(["check", "--json", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["endpoint"] == emu.endpoint and CANARY not in out
