"""The aiohttp application: profiles (docs/emulator.md) in front of the scenario-driven upstream; ``hermes-agent`` is
the real ``hermes proxy`` byte for byte, ``minimal`` an upstream unlike ours. Served on an event loop of its own in a
thread, so it works the same inside a Jupyter kernel (whose main thread runs a loop)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import logging
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from hermes_nb.core.errors import ConfigError, ProxyUnreachable
from hermes_nb.core.facts import PROXY_MAX_REQUEST_BYTES
from hermes_nb.core.model import EndpointHandle
from hermes_nb.core.providers import provider_info
from hermes_nb.core.redaction import Redactor, redact_headers

from . import scenarios as s
from .scenarios import EmulatorSpec

logger = logging.getLogger("hermes_nb.emulator")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

UPSTREAM_MAX_BYTES = 32 * 1024 * 1024
#: the real proxy's ``upstream_auth_failed`` text per provider (hermes_cli/proxy/adapters/*.py)
AUTH_STALE_MESSAGES = {
    "nous": "Failed to refresh Nous Portal credentials: Invalid refresh token",
    "xai": "No available xAI OAuth credentials found. Run `hermes auth reset xai-oauth` or re-authenticate with "
           "`hermes auth add xai-oauth --type oauth`.",
}
#: the real proxy's own answers when its upstream cannot be reached or times out (aiohttp's words, prefixed)
PROXY_FAULTS = {
    "upstream-unreachable": (502, "upstream connection failed: Cannot connect to host inference-api.nousresearch.com"
                                  ":443 ssl:default [Connect call failed ('127.0.0.1', 443)]", "upstream_unreachable"),
    "upstream-timeout": (504, "upstream request timed out", "upstream_timeout"),
}
GUARD_MESSAGE = "Request refused: browser requests and foreign Host names are not accepted by this proxy."
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: what the real proxy strips from the upstream's response headers
_HOP_BY_HOP = frozenset({
    "host", "content-length", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailers", "transfer-encoding", "upgrade", "authorization", "content-encoding",
})
MINIMAL_MODELS: tuple[str, ...] = ("minimal-chat-1", "minimal-chat-1-mini")
MINIMAL_MAX_BYTES = 1024 * 1024  # aiohttp's default client_max_size: the minimal upstream keeps it


@dataclass(slots=True)
class RecordedRequest:
    """One request as the emulator received it (sensitive header values and secret-shaped query values redacted)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-cased names
    scenario: str  # in effect: the default or the per-request header's
    json: Any = None  # the body, when the handler read one that parsed
    body_size: int | None = None  # None: the body was never read (e.g. a 404 before forwarding)
    status: int | None = None  # None while still streaming


@dataclass(slots=True)
class _State:
    spec: EmulatorSpec
    requests: list[RecordedRequest]
    capacity: asyncio.Semaphore  # ``concurrency-limited``: the chat requests that may be in flight
    closing: asyncio.Event = field(default_factory=asyncio.Event)  # set at shutdown: stalls and pauses end

    async def shut(self, _app: web.Application) -> None:
        self.closing.set()


STATE = web.AppKey("hermes_nb_state", _State)
SCENARIO_KEY = web.RequestKey("hermes_nb_scenario", str)
RECORD_KEY = web.RequestKey("hermes_nb_record", RecordedRequest)
#: when the request started (monotonic); deleted once its line is logged
STARTED_KEY = web.RequestKey("hermes_nb_started", float)


def _proxy_error(status: int, message: str, code: str) -> web.Response:  # the real proxy's ``_json_error``
    return web.json_response({"error": {"message": message, "type": code, "code": code}}, status=status)


def _refusal(headers: Any) -> str | None:
    """The local-only guard's error code for a request's headers, None when it passes (a 127.0.0.1 bind)."""
    host = headers.get("Host") or ""
    try:
        parts = urlsplit("//" + host)
        here = (parts.hostname, parts.port or 80)
    except ValueError:
        return "host_not_allowed"
    if any(ch in host for ch in "@/\\?# \t") or (parts.hostname or "").rstrip(".") not in _LOCAL_NAMES:
        return "host_not_allowed"
    origin = headers.get("Origin")
    try:
        seen = urlsplit(origin) if origin and "://" in origin else None
        if origin is not None and (seen is None or seen.scheme != "http" or (seen.hostname, seen.port or 80) != here):
            return "origin_not_allowed"
    except ValueError:
        return "origin_not_allowed"
    site = headers.get("Sec-Fetch-Site")
    return "origin_not_allowed" if site is not None and site.strip().lower() not in ("none", "same-origin") else None


@web.middleware
async def _observe(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Record the request, pick its scenario, log one line when it ends. ``concurrency-limited``: a chat request
    beyond ``max_concurrent`` in flight is answered as ``rate-limited``."""
    state = request.app[STATE]
    header = (request.headers.get(s.SCENARIO_HEADER) or "").strip()
    scenario = request[SCENARIO_KEY] = header if header in s.ALL_SCENARIOS else state.spec.scenario
    limited = scenario == "concurrency-limited" and request.method == "POST" \
        and request.path.endswith("/chat/completions")
    if limited and state.capacity.locked():
        request[SCENARIO_KEY] = "rate-limited"
        limited = False
    record = request[RECORD_KEY] = RecordedRequest(request.method, request.path, Redactor().text(request.query_string),
                                                   redact_headers(request.headers), scenario)
    state.requests.append(record)
    request[STARTED_KEY] = time.monotonic()
    try:
        async with state.capacity if limited else contextlib.nullcontext():
            response = await handler(request)
        record.status = response.status
        return response
    except web.HTTPException as exc:
        record.status = exc.status
        raise
    finally:
        _log_line(request)


def _log_line(request: web.Request) -> None:
    """The request's one log line: as its streamed body is whole (before the last chunk goes out, so a client that
    has read it all and stops the emulator finds it logged), else as the request ends."""
    started = request.pop(STARTED_KEY, None)
    if started is None:
        return
    record = request[RECORD_KEY]
    logger.info("%s %s %s -> %s scenario=%s %.1fms", request.app[STATE].spec.profile, request.method, request.path,
                record.status if record.status is not None else "aborted", record.scenario,
                (time.monotonic() - started) * 1000)


def _unknown(request: web.Request) -> s.Reply | None:
    """400 for a scenario this profile does not play, naming the profile (how the emulator is told from the rig)."""
    profile = request.app[STATE].spec.profile
    name = (request.headers.get(s.SCENARIO_HEADER) or "").strip()
    known = {"minimal": ("ok",), "upstream": s.UPSTREAM_SCENARIOS}.get(profile, s.ALL_SCENARIOS)
    if not name or name in known:
        return None
    msg = f"Unknown emulator scenario {name!r} for the {profile} profile. Known: {', '.join(known)}"
    return s.json_reply(400, s.envelope(msg, "invalid_request_error", "unknown_scenario"), {s.PROFILE_HEADER: profile})


@web.middleware
async def _gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The answers before any route: ``local_only``'s refusal (403, hermes-agent 0.22's local-only middleware), the
    minimal profile's unknown scenario (400)."""
    spec = request.app[STATE].spec
    if spec.local_only and spec.profile in ("hermes-agent", "seed") and (code := _refusal(request.headers)):
        return _proxy_error(403, GUARD_MESSAGE, code)
    if spec.profile == "minimal" and (unknown := _unknown(request)):
        return await _write(request, unknown, proxied=False)
    return await handler(request)


async def _pause(request: web.Request, seconds: float) -> bool:
    """Sleep ``seconds``; True (at once) when the emulator shuts down meanwhile."""
    closing = request.app[STATE].closing
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(closing.wait(), seconds)
    return closing.is_set()


async def _write(request: web.Request, reply: s.Reply, *, proxied: bool) -> web.StreamResponse:
    """Execute a reply plan; ``proxied``: as the real proxy relays it (chunked, hop-by-hop headers dropped)."""
    headers = {"Content-Type": reply.content_type, **reply.headers}
    if proxied:
        headers = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
    elif not reply.streamed:
        for part in reply.parts:
            if isinstance(part, s.Pause):
                await asyncio.sleep(part.seconds)
        body = b"".join(p for p in reply.parts if isinstance(p, bytes))
        return web.Response(status=reply.status, body=body, headers=headers)
    response = web.StreamResponse(status=reply.status, headers=headers)
    await response.prepare(request)
    try:
        for part in reply.parts:
            if isinstance(part, bytes):
                if part:
                    await response.write(part)
            elif isinstance(part, s.Pause):
                if await _pause(request, part.seconds):
                    return response  # the emulator is shutting down
            elif part == s.STALL:  # nothing more until the client goes away or the emulator shuts down
                while request.transport is not None and not request.transport.is_closing() \
                        and not await _pause(request, 0.2):
                    continue
                if request.transport is not None:
                    request.transport.close()
                return response
            elif part == s.RESET:
                if proxied:
                    break  # the real proxy logs the broken upstream and ends the body cleanly
                if (transport := request.transport) is not None:  # a TCP RST: SO_LINGER on, timeout 0
                    transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                                  struct.pack("ii", 1, 0))
                    transport.abort()
                return response
        request[RECORD_KEY].status = response.status  # the body is whole: logged before its last chunk goes out
        _log_line(request)
        await response.write_eof()
    except ConnectionError:
        logger.debug("client went away during %s %s", request.method, request.path)
    return response


async def _read_body(request: web.Request) -> bytes:
    raw = await request.read()  # raises HTTPRequestEntityTooLarge (413 text/plain) over client_max_size
    request[RECORD_KEY].body_size = len(raw)
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        request[RECORD_KEY].json = json.loads(raw) if raw else None
    return raw


async def _upstream(request: web.Request, rel: str, raw: bytes, *, proxied: bool) -> web.StreamResponse:
    """The upstream's answer (an unknown scenario's 400 too); ``slow-first-byte``: the upstream thinks first."""
    spec, scenario = request.app[STATE].spec, request[SCENARIO_KEY]
    reply = _unknown(request) or s.upstream_answer(spec, scenario, rel, request.method, raw)
    wait = spec.first_byte_s if scenario == "slow-first-byte" else 0.0
    if wait and (await _pause(request, wait) or request.transport is None or request.transport.is_closing()):
        return web.Response(status=499)  # never written: aiohttp drops it quietly
    return await _write(request, reply, proxied=proxied)


def _proxy_routes(app: web.Application, spec: EmulatorSpec) -> None:
    fronted = provider_info(spec.provider)
    assert fronted is not None

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "upstream": fronted.display_name,
                                  "authenticated": request[SCENARIO_KEY] != "auth-stale"})

    async def forward(request: web.Request, rel: str | None, path: str, *, proxied: bool) -> web.StreamResponse:
        """A route of a proxy profile: allowed or not, credential state, body, the proxy's own faults, upstream."""
        if rel not in fronted.allowed_paths:
            allowed = ", ".join(sorted(fronted.allowed_paths))
            return _proxy_error(404, f"Path {path} is not forwarded by this proxy. Allowed: {allowed}",
                                "path_not_allowed")
        if request[SCENARIO_KEY] == "auth-stale":
            return _proxy_error(401, AUTH_STALE_MESSAGES[spec.provider], "upstream_auth_failed")
        raw = await _read_body(request)  # the real proxy reads the body before it calls the upstream
        if request[SCENARIO_KEY] in PROXY_FAULTS:
            return _proxy_error(*PROXY_FAULTS[request[SCENARIO_KEY]])
        return await _upstream(request, rel, raw, proxied=proxied)

    async def hermes_agent(request: web.Request) -> web.StreamResponse:
        rel = "/" + request.match_info.get("tail", "").lstrip("/")
        return await forward(request, rel, f"/v1{rel}", proxied=True)

    async def seed(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        if auth is None:
            return _proxy_error(401, "Missing Authorization header. Send `Authorization: Bearer <any value>`.",
                                "missing_authorization")
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return _proxy_error(401, "Malformed Authorization header. Expected `Bearer <any value>`.",
                                "invalid_authorization")
        rel = request.path[3:] if request.path.startswith("/v1/") else None
        return await forward(request, rel, request.path, proxied=False)

    async def upstream(request: web.Request) -> web.StreamResponse:
        if not request.path.startswith("/v1/"):
            msg = f"Invalid URL ({request.method} {request.path})"
            return web.json_response(s.envelope(msg, "invalid_request_error", None, with_param=True), status=404)
        rel = request.path[3:]
        read = rel in s.UPSTREAM_ROUTES or (rel == s.RESPONSES_ROUTE and request.method == "POST")
        return await _upstream(request, rel, await _read_body(request) if read else b"", proxied=False)

    if spec.profile == "hermes-agent":
        app.router.add_get("/health", health)
        app.router.add_route("*", "/v1/{tail:.*}", hermes_agent)
    else:
        app.router.add_route("*", "/{tail:.*}", seed if spec.profile == "seed" else upstream)


def _minimal_routes(app: web.Application, spec: EmulatorSpec) -> None:
    """Two routes, aiohttp's defaults elsewhere, unlike our upstream in every detail docs/emulator.md lists."""
    names = tuple(spec.models) if spec.models else MINIMAL_MODELS
    counter = itertools.count(1)
    created = 1_700_000_000

    async def models(request: web.Request) -> web.Response:
        data = [{"id": name, "object": "model", "created": created, "owned_by": "minimal"} for name in names]
        return web.json_response({"object": "list", "data": data})

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()  # raises 413 text/plain over 1 MiB
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": {"message": "body is not JSON", "type": "invalid_request_error"}},
                                     status=400)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return web.json_response({"error": {"message": "messages is required", "type": "invalid_request_error"}},
                                     status=400)
        top = {"id": f"min-{next(counter)}", "object": "chat.completion", "created": created,
               "model": str(body.get("model") or names[0])}
        text = s.reply_text(spec.seed, body)
        if not body.get("stream"):
            return web.json_response({**top, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                          "finish_reason": "stop"}],
                                      "usage": s.usage_for(s.prompt_text(body), text)})

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            obj = {**top, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\r\n\r\n"

        parts: list[s.Part] = [b": minimal upstream\r\n\r\n", chunk({"role": "assistant"})]
        for piece in s.split_deltas(text):
            parts += [b": keep-alive\r\n\r\n", chunk({"content": piece})]
        parts += [chunk({}, "stop"), b"data: [DONE]\r\n\r\n"]
        reply = s.Reply(200, "text/event-stream", parts, {"Cache-Control": "no-cache"}, streamed=True)
        return await _write(request, reply, proxied=False)

    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)


def create_app(spec: EmulatorSpec | None = None, **options: Any) -> web.Application:
    """The emulator's application, not started: ``spec``, or its options as keywords (ValueError for a bad one)."""
    spec = EmulatorSpec.of(**options) if spec is None else spec
    max_size = {"minimal": MINIMAL_MAX_BYTES, "upstream": UPSTREAM_MAX_BYTES}.get(spec.profile, PROXY_MAX_REQUEST_BYTES)
    app = web.Application(client_max_size=max_size, middlewares=[_observe, _gate])
    (_minimal_routes if spec.profile == "minimal" else _proxy_routes)(app, spec)
    app[STATE] = _State(spec, [], asyncio.Semaphore(spec.max_concurrent))
    app.on_shutdown.append(app[STATE].shut)
    return app


class _ServerThread(threading.Thread):
    """An aiohttp app served on a listening socket, on an event loop of its own."""

    def __init__(self, app: web.Application, sock: socket.socket) -> None:
        super().__init__(name=f"hermes-nb-emulator-{sock.getsockname()[1]}", daemon=True)  # in its log records
        self.app, self.sock = app, sock
        self.loop = asyncio.new_event_loop()
        self.stopping = asyncio.Event()

    def run(self) -> None:
        with asyncio.Runner(loop_factory=lambda: self.loop) as runner:  # closing, it ends every task left (each logs)
            runner.run(self._serve())

    async def _serve(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            await web.SockSite(runner, self.sock).start()
            await self.stopping.wait()
        finally:
            await runner.cleanup()

    def shutdown(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: stopped already
            self.loop.call_soon_threadsafe(self.stopping.set)
        self.join(10.0)


class EmulatorHandle(EndpointHandle):
    """A running emulator: the string value is the endpoint (``http://127.0.0.1:<port>/v1``); ``with`` closes it."""

    base_url: str
    host: str
    port: int
    profile: str
    scenario: str
    seed: int
    provider: str  # what the proxy profiles front
    _log: list[RecordedRequest]
    _thread: _ServerThread

    def __repr__(self) -> str:
        return f"EmulatorHandle({self.endpoint!r}, profile={self.profile!r}, scenario={self.scenario!r})"

    @property
    def requests(self) -> list[RecordedRequest]:  # a snapshot
        return list(self._log)

    def clear(self) -> None:
        self._log.clear()

    def wait_for_requests(self, count: int, *, timeout: float = 5.0) -> list[RecordedRequest]:
        """Poll (with a deadline) until ``count`` requests have finished; return them."""
        deadline = time.monotonic() + timeout
        while len(done := [r for r in self._log if r.status is not None]) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return done

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop the server (idempotent); stalled streams are ended."""
        self._thread.shutdown()
        atexit.unregister(self.close)

    def __enter__(self) -> EmulatorHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_emulator(*, port: int = 0, **options: Any) -> EmulatorHandle:
    """Start an emulator now, on a free loopback port unless ``port`` names one; ``options`` are
    :class:`~hermes_nb.emulator.scenarios.EmulatorSpec`'s (ValueError for a bad one); ProxyUnreachable: no listening."""
    spec = EmulatorSpec.of(port=port, **options)
    family = socket.AF_INET6 if ":" in spec.host else socket.AF_INET
    try:  # listening before the thread starts: a request that comes first waits in the backlog
        sock = socket.create_server((spec.host, port), family=family, reuse_port=spec.reuse_port)
    except OSError as exc:
        raise ProxyUnreachable(f"emulator could not listen on {spec.host}:{port}: {exc.strerror or exc}") from exc
    thread = _ServerThread(app := create_app(spec), sock)
    thread.start()
    bound = sock.getsockname()[1]
    base_url = f"http://[{spec.host}]:{bound}" if ":" in spec.host else f"http://{spec.host}:{bound}"
    handle = EmulatorHandle(f"{base_url}/v1", base_url=base_url, host=spec.host, port=bound, profile=spec.profile,
                            scenario=spec.scenario, seed=spec.seed, provider=spec.provider, _log=app[STATE].requests,
                            _thread=thread)
    atexit.register(handle.close)
    return handle


def run(spec: EmulatorSpec, *, line: Callable[[str], None], emit: Callable[[dict[str, Any]], None],
        info: Callable[[str], None]) -> int:
    """Serve until Ctrl-C/SIGTERM (exit 0): ``line`` gets the endpoint, ``emit`` the JSON, ``info`` progress."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("hermes-nb emulator: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with serve_emulator(**spec.model_dump()) as emu:
            line(emu.endpoint)
            emit({"endpoint": emu.endpoint, "base_url": emu.base_url, "port": emu.port, "profile": spec.profile,
                  "provider": spec.provider, "scenario": spec.scenario, "seed": spec.seed, "models": list(spec.listed)})
            info(f"hermes-nb emulator: {spec.profile} profile ({spec.provider}), scenario {spec.scenario}, "
                 f"seed {spec.seed}; Ctrl-C to stop")
            try:
                emu._thread.join()
            except KeyboardInterrupt:  # SIGINT and SIGTERM alike
                info("hermes-nb emulator: stopping")
    except ProxyUnreachable as exc:  # the port named is taken: a usage error here
        reason = getattr(exc.__cause__, "strerror", None) or exc
        raise ConfigError(f"cannot listen on {spec.host}:{spec.port}: {reason}") from exc
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        logger.removeHandler(handler)
    return 0
