"""What the rig puts around the real proxy, all on loopback: its throwaway auth store, the egress sink (where every
request the proxy tries to send off the machine ends), the fake Nous portal of the ``challenge`` state and the
upstream of the ``live`` state (the emulator, the minimal upstream or a server started from a command line)."""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import shlex
import socketserver
import subprocess
import threading
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.handles import EndpointHandle
from hermes_nb.core.providers import auth_store_id
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.content import MODELS_BY_PROVIDER
from hermes_nb.rig.executable import base_env, free_port, last_lines, spawn, wait_until_answers

__all__ = ["auth_store_document", "unsigned_jwt", "EgressSink", "FakePortal", "UPSTREAMS", "CommandUpstream",
           "upstream_command", "start_upstream"]

_SCOPE = "inference:invoke"
_PAST = "2020-01-01T00:00:00+00:00"
#: ``upstream=`` names the rig knows; anything else is a command line with ``{port}``
UPSTREAMS: tuple[str, ...] = ("emulator", "minimal")


def unsigned_jwt(**claims: Any) -> str:
    """``alg: none`` with an empty signature: the proxy reads the claims without verifying them."""
    parts = ({"alg": "none", "typ": "JWT"}, claims)
    return ".".join([base64.urlsafe_b64encode(json.dumps(p, separators=(",", ":"), sort_keys=True).encode())
                     .rstrip(b"=").decode("ascii") for p in parts] + [""])


def auth_store_document(state: str, *, provider: str = "nous", base_url: str = "http://127.0.0.1:9/v1",
                        portal_url: str = "http://127.0.0.1:9") -> dict[str, Any] | None:
    """The ``auth.json`` of ``provider`` in ``state`` (hermes-agent's layout), fresh random tokens; None: logged out.

    live: a JWT valid for a day (beyond xAI's proactive refresh). stale: one the proxy must refresh first (nous:
    not a JWT; xai: expired an hour ago), and every refresh fails on this machine. challenge: a Nous free-tier guest
    whose key expired long ago. xai's pooled credential sends to ``base_url``; nous reads its env instead."""
    if state == "logged-out":
        return None
    now, refresh = datetime.now(UTC), f"rig-refresh-{secrets.token_urlsafe(18)}"
    exp = now + timedelta(hours=24 if state == "live" else -1)
    claims = {"sub": "hermes-nb-rig", "iat": int(now.timestamp()), "exp": int(exp.timestamp()),
              "jti": secrets.token_hex(12)}
    if provider == "xai":
        entry = {"id": f"rig{secrets.token_hex(3)}", "label": "hermes-nb-rig", "auth_type": "oauth", "priority": 0,
                 "source": "manual", "access_token": unsigned_jwt(**claims), "refresh_token": refresh,
                 "base_url": base_url, "expires_at": exp.isoformat()}
        return {"version": 1, "providers": {}, "credential_pool": {auth_store_id("xai"): [entry]}}
    if state == "challenge":
        key = unsigned_jwt(sub="hermes-nb-rig", scope=_SCOPE, account_tier="anonymous", exp=1577836800,
                           jti=secrets.token_hex(12))
        nous = {"auth_method": "anonymous", "account_tier": "anonymous", "client_id": "nas-anonymous",
                "anon_token": f"anon_{secrets.token_urlsafe(18)}", "portal_base_url": portal_url, "welcome_claim": True,
                "access_token": key, "agent_key": key, "token_type": "Bearer", "scope": _SCOPE, "expires_at": _PAST,
                "agent_key_expires_at": _PAST}
    elif state == "stale":
        nous = {"access_token": f"rig-stale-{secrets.token_urlsafe(18)}", "refresh_token": refresh,
                "token_type": "Bearer"}
    else:
        nous = {"access_token": unsigned_jwt(scope=_SCOPE, **claims), "refresh_token": refresh,
                "token_type": "Bearer", "scope": _SCOPE, "expires_at": exp.isoformat()}
    return {"version": 1, "providers": {"nous": nous}}


class _FirstLine(socketserver.StreamRequestHandler):
    timeout = 1.0

    def handle(self) -> None:
        try:
            line = self.rfile.readline(512).rstrip(b"\r\n").decode("latin-1", "replace")
        except OSError:
            line = ""
        cast(EgressSink, self.server).attempts.append(line or "(connection without a request line)")


class EgressSink(socketserver.ThreadingTCPServer):
    """Records the first line of each connection (``attempts``) and closes it. The child's proxy variables point
    here, so a token refresh becomes ``CONNECT auth.x.ai:443`` to the sink; aiohttp (the proxy's forwarding)
    ignores them."""

    def __init__(self, handler: type[socketserver.BaseRequestHandler] = _FirstLine) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.attempts: list[str] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, args=(0.1,), daemon=True).start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Portal(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        portal = cast(FakePortal, self.server)
        portal.attempts.append(f"POST {self.path}")
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = {
            "/api/anonymous/token": (428, {"error": "challenge_required", "challenges": [
                {"type": "browser", "url": f"{portal.url}/challenge/hermes-nb", "required": True, "expires_in": 600,
                 "interval": 2}]}),
            "/api/anonymous/challenge/status": (200, {"status": "pending"}),
        }.get(self.path.split("?")[0], (404, {"error": "not_found"}))
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakePortal(EgressSink):
    """The Nous portal of the ``challenge`` state (``HERMES_PORTAL_BASE_URL`` wins outright in hermes-agent): every
    guest credential exchange gets the free tier's browser challenge (428 ``challenge_required``)."""

    def __init__(self) -> None:
        super().__init__(_Portal)


class CommandUpstream(EndpointHandle):
    """An OpenAI-compatible server the rig started from a command line; the string is its ``/v1`` endpoint."""

    endpoint: str
    command: list[str]
    process: subprocess.Popen[Any]
    log_path: Path

    def __repr__(self) -> str:
        return f"CommandUpstream(endpoint={self.endpoint!r}, command={self.command[0]!r}, pid={self.process.pid})"

    @property
    def requests(self) -> list[Any]:
        return []  # a foreign server: the rig does not see what it received


def upstream_command(command: str, port: int) -> list[str]:
    """``command`` split like a shell would, with ``{port}`` replaced; UsageError when it has no ``{port}``."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"upstream command {command!r}: {exc}") from None
    if not any("{port}" in a for a in argv):
        raise UsageError(f"upstream {command!r}: give emulator, minimal, or a command line with {{port}} "
                         "(e.g. 'llmock serve --host 127.0.0.1 --port {port}')")
    return [a.replace("{port}", str(port)) for a in argv]


def start_upstream(stack: ExitStack, upstream: str, scenario: str, *, root: Path, deadline_s: float,
                   provider: str = "nous") -> Any:
    """The server behind the live proxy, entered on ``stack``: the emulator's ``upstream`` profile (listing
    ``provider``'s models), the minimal upstream, or a command run in the rig's temp home, ready once
    ``GET /v1/models`` gets any HTTP answer."""
    if upstream == "minimal":
        return stack.enter_context(serve_emulator(profile="minimal", scenario=scenario))
    if upstream == "emulator":
        return stack.enter_context(serve_emulator(profile="upstream", scenario=scenario,
                                                  models=MODELS_BY_PROVIDER[provider]))
    port = free_port()
    argv = upstream_command(upstream, port)
    if "/" in argv[0]:  # a relative path is the caller's, not the temp home's
        argv[0] = str(Path(argv[0]).absolute())
    endpoint, log_path = f"http://127.0.0.1:{port}/v1", root / "upstream.log"
    proc = spawn(stack, argv, log_path=log_path, env=base_env(home=root / "home") | {"TMPDIR": str(root / "tmp")},
                 cwd=root / "home", what="upstream")
    if not wait_until_answers(proc, endpoint, lambda c: c.request("GET", "/models", auth=False, deadline_s=1.0).status
                              is not None, deadline_s=deadline_s,
                              what=f"upstream command did not answer GET {endpoint}/models"):
        tail = last_lines(log_path.read_text("utf-8", "replace"))
        raise RigError(f"upstream command exited {proc.returncode} before it answered: {tail or '(no output)'}")
    return CommandUpstream(endpoint, command=argv, process=proc, log_path=log_path)
