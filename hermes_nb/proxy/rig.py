"""The real ``hermes proxy start --provider nous|xai`` on loopback, with a throwaway ``HERMES_HOME``.

The proxy runs from its own virtual environment (hermes-agent pins its own
pydantic, httpx and openai), found by :func:`find_hermes_bin`. Each rig gets
a fresh temporary directory holding the child's ``HOME``, ``HERMES_HOME``
and shared-auth directory, so the user's ``~/.hermes`` is never read or
written. The auth store of each provider and state: :mod:`hermes_nb.proxy.rig_auth`.

``stale``
    credentials the proxy must refresh, and every refresh fails on this machine: every forwarded
    route answers 401 ``upstream_auth_failed`` (nous: the portal, ``HERMES_PORTAL_BASE_URL``, is a
    loopback port that refuses connections; xai: the token endpoint is reached through the egress
    sink, which closes the connection — "No available xAI OAuth credentials found. Run `hermes auth
    reset xai-oauth` or …").
``live``
    a usable token; the upstream (default: the embedded emulator in its ``upstream`` profile; or the
    ``minimal`` upstream, or any OpenAI-compatible server started from a command line) is on loopback:
    nous reads it from ``NOUS_INFERENCE_BASE_URL``, xai from the credential's ``base_url``.
``logged-out``
    no ``auth.json``: ``hermes proxy start`` exits 2 ("Not logged into Nous Portal…" / "Not logged into
    xAI Grok OAuth…") and :func:`real_proxy` raises :class:`~hermes_nb.core.errors.RigError` with the
    provider's log-in command.

No request leaves the machine: the proxy variables of the child point at an egress sink on loopback
(:mod:`hermes_nb.proxy.egress`; ``RigHandle.egress`` lists what was attempted), and a live rig is
refused for a release whose proxy would ignore the loopback upstream (:func:`live_supported`).

Readiness is a poll of ``GET /health`` under a deadline (the child's early
exit is detected on every round); the proxy and the upstream are stopped on
exit, errors included. The child's output goes to ``proxy.log`` in the temp
directory; anything we show from it passes through the rig's
:class:`~hermes_nb.core.redaction.Redactor` (it knows every auth-store secret).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.model import EndpointHandle
from hermes_nb.core.providers import PROXY_PROVIDERS, logged_out_hint, provider_info
from hermes_nb.core.redaction import Redactor, auth_store_secrets
from hermes_nb.core.spec import Spec
from hermes_nb.proxy.egress import EgressSink, proxy_environment
from hermes_nb.proxy.executable import (
    ENV_HERMES_BIN,
    INSTALL_HINT,
    base_env,
    find_hermes_bin,
    hermes_version,
    live_supported,
    require_hermes_bin,
    stop_process,
    wait_until_answers,
)
from hermes_nb.proxy.rig_auth import INVOKE_SCOPE, STATES, auth_store_document, check_provider, unsigned_jwt
from hermes_nb.proxy.upstreams import UPSTREAMS, CommandUpstream, start_upstream, upstream_command

__all__ = [
    "STATES",
    "PROVIDERS",
    "INVOKE_SCOPE",
    "RigHandle",
    "ENV_HERMES_BIN",
    "INSTALL_HINT",
    "find_hermes_bin",
    "require_hermes_bin",
    "hermes_version",
    "live_supported",
    "free_port",
    "UPSTREAMS",
    "CommandUpstream",
    "upstream_command",
    "unsigned_jwt",
    "auth_store_document",
    "child_environment",
    "real_proxy",
]

#: the providers the rig can start (``hermes proxy start --provider …``)
PROVIDERS: tuple[str, ...] = PROXY_PROVIDERS


# --------------------------------------------------------------------------- process


def child_environment(root: Path, *, portal_url: str, inference_url: str | None = None,
                      egress_url: str | None = None) -> dict[str, str]:
    """Minimal environment: PATH, a temp HOME/HERMES_HOME, the Hermes/Nous overrides the rig needs, and the
    proxy variables that send any off-machine call to the egress sink (``egress_url``) instead."""
    env = base_env()
    env |= {
        "HOME": str(root / "home"),
        "HERMES_HOME": str(root / "hermes-home"),
        "HERMES_SHARED_AUTH_DIR": str(root / "shared"),
        "HERMES_PORTAL_BASE_URL": portal_url,
        "TMPDIR": str(root / "tmp"),
    }
    if inference_url:
        env["NOUS_INFERENCE_BASE_URL"] = inference_url
    if egress_url:
        env |= proxy_environment(egress_url)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refusing_port(stack: ExitStack) -> int:
    """A loopback port that refuses connections for the rig's lifetime (bound, never listening)."""
    sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    sock.bind(("127.0.0.1", 0))
    return int(sock.getsockname()[1])


class RigHandle(EndpointHandle):
    """A running real proxy. The string value is the endpoint (``http://127.0.0.1:<port>/v1``).

    So ``with real_proxy("live") as endpoint:`` works wherever an endpoint string does.
    """

    endpoint: str
    base_url: str
    port: int
    state: str
    hermes_bin: Path
    hermes_version: str | None
    log_path: Path
    startup_s: float
    process: subprocess.Popen[Any]
    redactor: Redactor
    #: what answers behind the proxy in the live state: an emulator handle or a :class:`CommandUpstream`
    upstream: Any = None
    #: ``emulator`` | ``minimal`` | ``command`` (None outside the live state)
    upstream_kind: str | None = None
    #: ``nous`` | ``xai`` (``hermes proxy start --provider``)
    provider: str = "nous"
    #: the egress sink: what the proxy tried to send off the machine (``.attempts``)
    egress_sink: EgressSink | None = None

    def __repr__(self) -> str:
        return (f"RigHandle(endpoint={self.endpoint!r}, provider={self.provider!r}, state={self.state!r}, "
                f"hermes_version={self.hermes_version!r}, pid={self.process.pid})")

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def egress(self) -> list[str]:
        """First request lines the proxy sent toward the outside world (each ended at the sink, locally)."""
        return self.egress_sink.attempts if self.egress_sink is not None else []

    def log_text(self) -> str:
        """The child's output so far, redacted."""
        try:
            return self.redactor.text(self.log_path.read_text("utf-8", "replace"))
        except OSError:
            return ""

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the proxy exits (or ``timeout``); its exit code, or None if still running."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def _wait_ready(proc: subprocess.Popen[Any], base_url: str, *, deadline_s: float) -> bool:
    """Poll ``GET /health`` until 200 JSON; False when the child exited first. Raises RigError on deadline."""

    def healthy(client: Any) -> bool:
        answer = client.health(deadline_s=1.0)
        return answer.status == 200 and isinstance(answer.json_body, dict) and "status" in answer.json_body

    return wait_until_answers(proc, f"{base_url}/v1", healthy, deadline_s=deadline_s,
                              what="hermes proxy did not answer GET /health")


@contextmanager
def real_proxy(
    state: str = "live",
    *,
    provider: str = "nous",
    port: int = 0,
    hermes_bin: str | os.PathLike[str] | None = None,
    upstream_scenario: str = "ok",
    upstream: str = "emulator",
    deadline_s: float = 30.0,
    keep_dir: bool = False,
) -> Iterator[RigHandle]:
    """Run the real ``hermes proxy start --provider <provider>`` in ``state``; yield a :class:`RigHandle`.

    In the live state ``upstream`` says what answers behind the proxy: ``emulator`` (the
    emulator's ``upstream`` profile, ``upstream_scenario``), ``minimal`` (the deliberately
    different upstream, :mod:`hermes_nb.emulator.minimal`) or a command line containing
    ``{port}`` that starts any OpenAI-compatible server on ``127.0.0.1:{port}`` (its base path
    must be ``/v1``; it is stopped with the proxy).

    Raises :class:`RigError` (exit 3) when no hermes is found, when the proxy
    exits before it is ready (logged-out: "Not logged into …") or
    when ``/health`` does not answer within ``deadline_s``.
    """
    if state not in STATES:
        raise RigError(f"unknown rig state {state!r}; choose one of {', '.join(STATES)}")
    check_provider(provider)
    from hermes_nb.emulator import UPSTREAM_SCENARIOS  # light: no aiohttp

    if state == "live" and upstream_scenario not in UPSTREAM_SCENARIOS:
        raise UsageError(f"unknown upstream scenario {upstream_scenario!r}; "
                         f"choose one of {', '.join(UPSTREAM_SCENARIOS)}")
    if state == "live" and upstream not in UPSTREAMS:
        upstream_command(upstream, 0)  # a usage error before anything starts
    if state == "live" and upstream == "minimal" and upstream_scenario != "ok":
        raise UsageError(f"the minimal upstream has one scenario, ok (got {upstream_scenario!r})")
    if not deadline_s > 0:
        raise UsageError(f"deadline_s must be > 0, got {deadline_s!r}")
    binary = require_hermes_bin(hermes_bin)
    version = hermes_version(binary)
    if state == "live" and live_supported(binary, provider) is False:
        ignored = "ignores NOUS_INFERENCE_BASE_URL (https allowlist only)" if provider == "nous" else \
            "ignores the credential's base_url"
        raise RigError(f"hermes-agent {version or '?'} at {binary}: its {provider} proxy {ignored}, so a live rig "
                       "would forward off this machine; use a newer release")
    with ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix=f"hermes-nb-rig-{state}-"))
        if not keep_dir:
            stack.callback(shutil.rmtree, root, True)
        for sub in ("home", "hermes-home", "shared", "tmp"):
            (root / sub).mkdir(mode=0o700)
        portal = f"http://127.0.0.1:{_refusing_port(stack)}"
        sink = stack.enter_context(EgressSink())
        behind = (start_upstream(stack, upstream, upstream_scenario, root=root, deadline_s=deadline_s,
                                 provider=provider) if state == "live" else None)
        upstream_url = _endpoint_of(behind) if behind is not None else f"{portal}/v1"
        document = auth_store_document(state, provider=provider, base_url=upstream_url)
        redactor = Redactor(auth_store_secrets(document) if document else ())
        if document is not None:
            store = root / "hermes-home" / "auth.json"
            store.write_text(json.dumps(document, indent=2), "utf-8")
            store.chmod(0o600)
        env = child_environment(root, portal_url=portal, egress_url=sink.url,
                                inference_url=upstream_url if behind is not None and provider == "nous" else None)
        log_path = root / "proxy.log"
        attempts = 1 if port else 3
        for attempt in range(attempts):
            chosen = port or free_port()
            base_url = f"http://127.0.0.1:{chosen}"
            started = time.monotonic()
            with log_path.open("ab") as log:
                proc = subprocess.Popen(
                    [str(binary), "proxy", "start", "--provider", provider, "--host", "127.0.0.1",
                     "--port", str(chosen)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                    cwd=root / "home", start_new_session=True,
                )
            stack.callback(stop_process, proc)
            if _wait_ready(proc, base_url, deadline_s=deadline_s):
                break
            code = proc.returncode
            tail = _last_lines(redactor.text(log_path.read_text("utf-8", "replace")))
            if "failed to bind" in tail and attempt + 1 < attempts:
                continue  # lost the free-port race to another process: pick again
            message = f"`hermes proxy start` exited {code} before it was ready: {tail or '(no output)'}"
            if any(word in tail.lower() for word in ("logged in", "hermes auth", "login")):
                info = provider_info(provider)
                message += (f"; the proxy needs {info.display_name if info else provider} credentials: "
                            f"{logged_out_hint(provider)}")
            raise RigError(message)
        handle = RigHandle(
            endpoint=f"{base_url}/v1", base_url=base_url, port=chosen, state=state, provider=provider,
            egress_sink=sink, hermes_bin=binary,
            hermes_version=version, log_path=log_path, startup_s=time.monotonic() - started,
            process=proc, redactor=redactor, upstream=behind,
            upstream_kind=(upstream if upstream in UPSTREAMS else "command") if behind is not None else None,
        )
        yield handle


def _endpoint_of(emu: Any) -> str:
    endpoint = getattr(emu, "endpoint", None)
    return str(endpoint if endpoint is not None else emu)


class RigSpec(Spec):
    """The rig's options (``hermes-nb rig``)."""

    provider: Provider = Field("nous", description="`hermes proxy start --provider`; xai: its credential pool "
                                                   "points at the loopback upstream")
    state: Literal["stale", "live", "logged-out"] = Field(
        "live", description="auth state: stale (401 upstream_auth_failed), live (forwards to the upstream), "
                            "logged-out (the proxy refuses to start)")
    port: int = Field(0, ge=0, le=65535, description="proxy port (0: a free loopback port)")
    hermes_bin: str | None = Field(None, description="the hermes executable (default: $HERMES_NB_HERMES_BIN, "
                                                     ".venv-hermes/bin/hermes, PATH)")
    scenario: str = Field("ok", description="the upstream emulator's scenario in the live state (paced and "
                                            "concurrency-limited for `hermes-nb load`; slow-first-byte, slow-answer)")
    upstream: str = Field("emulator", description="what answers behind the proxy in the live state: emulator, "
                                                  "minimal (a deliberately different OpenAI-compatible upstream) or "
                                                  "a command line with {port} that starts an OpenAI-compatible "
                                                  "server on 127.0.0.1:{port}/v1")
    ready_budget_s: float = Field(30.0, gt=0, description="the longest wait for the proxy to be ready")
