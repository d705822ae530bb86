"""The rig's egress sink: every request the real proxy tries to send off this machine ends here, and fails.

hermes-agent reaches its providers' auth servers with httpx (a token refresh, OIDC discovery), and
httpx honours ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``. The rig points them at this sink on
loopback (``NO_PROXY`` keeps loopback itself direct): a refresh of stale xAI credentials becomes
``CONNECT auth.x.ai:443`` *to the sink*, which records that first line and closes the connection —
the refresh fails locally, nothing is resolved or sent beyond the machine, and the rig can show what
was attempted (:attr:`EgressSink.attempts`). The proxy's own forwarding uses aiohttp, which ignores
those variables (``trust_env`` is off), so a live rig still reaches its loopback upstream.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress

__all__ = ["EgressSink", "proxy_environment"]

_FIRST_LINE_MAX = 512


class EgressSink:
    """A loopback listener that records the first line of each connection and closes it."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = int(self._sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._attempts: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="hermes-nb-egress-sink", daemon=True)
        self._thread.start()

    @property
    def attempts(self) -> list[str]:
        """First lines received, e.g. ``CONNECT auth.x.ai:443 HTTP/1.1`` (the host names what was tried)."""
        with self._lock:
            return list(self._attempts)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(1.0)
                data = b""
                with suppress(OSError):
                    while b"\n" not in data and len(data) < _FIRST_LINE_MAX:
                        chunk = conn.recv(256)
                        if not chunk:
                            break
                        data += chunk
                line = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1", "replace")[:_FIRST_LINE_MAX]
                with self._lock:
                    self._attempts.append(line or "(connection without a request line)")

    def close(self) -> None:
        self._stop.set()
        with suppress(OSError):
            self._sock.close()
        self._thread.join(timeout=2.0)

    def __enter__(self) -> EgressSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def proxy_environment(sink_url: str) -> dict[str, str]:
    """The proxy variables (both spellings) that send every non-loopback httpx/requests call to the sink."""
    env: dict[str, str] = {}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = sink_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    return env
