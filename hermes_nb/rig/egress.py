"""The rig's loopback stand-ins for the outside world: the egress sink, where every request the real proxy tries to
send off this machine ends (and fails), and the fake Nous portal of the ``challenge`` state.

hermes-agent reaches its providers' auth servers with httpx (a token refresh, OIDC discovery), and httpx honours
``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``. The rig points them at the sink (``NO_PROXY`` keeps loopback
direct): a refresh of stale xAI credentials becomes ``CONNECT auth.x.ai:443`` *to the sink*, which records that
first line and closes the connection — nothing is resolved or sent beyond the machine, and the rig shows what was
attempted (:attr:`EgressSink.attempts`). The proxy's own forwarding uses aiohttp, which ignores those variables, so a
live rig still reaches its loopback upstream. The portal (``HERMES_PORTAL_BASE_URL`` wins outright in hermes-agent)
answers a guest's credential exchange with the free tier's browser challenge (428 ``challenge_required``).
"""

from __future__ import annotations

import http.server
import json
import socketserver
import threading
from typing import Any

__all__ = ["EgressSink", "FakePortal", "proxy_environment"]

_FIRST_LINE_MAX = 512


class _Loopback:
    """A threading server on a free loopback port, stopped on exit; ``attempts``: one line per request."""

    handler: type[socketserver.BaseRequestHandler]
    server_class: Any = socketserver.ThreadingTCPServer

    def __init__(self) -> None:
        self._server: Any = self.server_class(("127.0.0.1", 0), self.handler)
        self._lines: list[str] = []
        self._server.owner = self  # the handlers report to their owner
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        threading.Thread(target=self._server.serve_forever, args=(0.1,), daemon=True,
                         name=f"hermes-nb-{type(self).__name__}").start()

    def record(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)

    @property
    def attempts(self) -> list[str]:
        """What arrived, one line each (the sink: ``CONNECT auth.x.ai:443 HTTP/1.1``; the portal: ``POST /path``)."""
        with self._lock:
            return list(self._lines)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _FirstLine(socketserver.StreamRequestHandler):
    timeout = 1.0

    def handle(self) -> None:
        try:
            data = self.rfile.readline(_FIRST_LINE_MAX)
        except OSError:
            data = b""
        line = data.rstrip(b"\r\n").decode("latin-1", "replace")
        self.server.owner.record(line or "(connection without a request line)")  # type: ignore[attr-defined]


class EgressSink(_Loopback):
    """A loopback listener that records the first line of each connection and closes it."""

    handler = _FirstLine


class _Portal(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        self.server.owner.record(f"POST {self.path}")  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        origin = self.server.owner.url  # type: ignore[attr-defined]  # set by _Loopback
        status, body = {
            "/api/anonymous/token": (428, {"error": "challenge_required", "challenges": [
                {"type": "browser", "url": f"{origin}/challenge/hermes-nb", "required": True, "expires_in": 600,
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


class FakePortal(_Loopback):
    """The Nous portal of the ``challenge`` state: every guest credential exchange gets the browser challenge."""

    handler = _Portal
    server_class = http.server.ThreadingHTTPServer


def proxy_environment(sink_url: str) -> dict[str, str]:
    """The proxy variables (both spellings) that send every non-loopback httpx/requests call to the sink."""
    env: dict[str, str] = {}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = sink_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    return env
