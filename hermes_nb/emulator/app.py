"""The aiohttp application: three profiles in front of the scenario-driven upstream.

``hermes-agent``  the real ``hermes proxy`` (hermes-agent 0.19.0, ``hermes_cli/proxy/server.py``):
                  same routes, same aiohttp defaults (404/405/413 text bodies, Server header),
                  same JSON errors, same pass-through of the upstream's status, headers and body.
``seed``          the contract the wire-format spike documented: bearer required, JSON
                  ``path_not_allowed`` 404 for everything but the four ``/v1`` routes.
``upstream``      a plain OpenAI-compatible server (``/v1/chat/completions`` …, ``/v1/responses``:
                  :mod:`.responses`) that can sit behind the real proxy
                  (``NOUS_INFERENCE_BASE_URL=http://127.0.0.1:<port>/v1``, or an xai credential's ``base_url``).

The proxy profiles front the provider ``provider`` (``nous`` by default, or ``xai``: ``/health``'s
``upstream``, the forwarded paths — xai adds ``/responses`` — and the proxy's own texts follow it).
``minimal``       a deliberately different OpenAI-compatible upstream (:mod:`.minimal`): two
                  routes, 1 MiB body cap, CRLF SSE with comments; scenario ``ok`` only.

``local_only`` puts hermes-agent 0.22's guard before every route of the proxy profiles (bound to 127.0.0.1): a
foreign or non-canonical Host (``127.1``), an Origin other than the Host's own, or a ``Sec-Fetch-Site`` other than
``none``/``same-origin`` gets 403 ``host_not_allowed`` / ``origin_not_allowed``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from hermes_nb.core.facts import PROXY_MAX_REQUEST_BYTES
from hermes_nb.core.providers import provider_info
from hermes_nb.core.redaction import Redactor, redact_headers

from . import content as c
from .responses import RESPONSES_ROUTE, method_not_allowed, responses_reply
from .scenarios import (
    ALL_SCENARIOS,
    PROFILE_HEADER,
    PROFILES,
    PROXY_SCENARIOS,
    SCENARIO_HEADER,
    UPSTREAM_ROUTES,
    Reply,
    Settings,
    check_profile,
    json_reply,
    upstream_reply,
)
from .trouble import stretch
from .writer import CLOSING_KEY, answer

__all__ = [
    "PROFILES",
    "SCENARIO_HEADER",
    "MAX_REQUEST_BYTES",
    "RecordedRequest",
    "create_app",
    "AUTH_STALE_MESSAGE",
]

logger = logging.getLogger("hermes_nb.emulator")

#: the real proxy's ``client_max_size`` (413 text/plain above it)
MAX_REQUEST_BYTES = PROXY_MAX_REQUEST_BYTES
UPSTREAM_MAX_BYTES = 32 * 1024 * 1024
AUTH_STALE_MESSAGE = "Failed to refresh Nous Portal credentials: Invalid refresh token"
#: the real proxy's ``upstream_auth_failed`` text per provider (hermes_cli/proxy/adapters/*.py)
AUTH_STALE_MESSAGES = {
    "nous": AUTH_STALE_MESSAGE,
    "xai": "No available xAI OAuth credentials found. Run `hermes auth reset xai-oauth` or re-authenticate with "
           "`hermes auth add xai-oauth --type oauth`.",
}
#: what aiohttp says when the upstream refuses the connection (the real proxy prefixes it)
UNREACHABLE_MESSAGE = ("upstream connection failed: Cannot connect to host inference-api.nousresearch.com:443 "
                       "ssl:default [Connect call failed ('127.0.0.1', 443)]")

#: hermes-agent 0.22's refusal (hermes_cli/proxy/server.py, the local-only middleware)
GUARD_MESSAGE = "Request refused: browser requests and foreign Host names are not accepted by this proxy."
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

SETTINGS_KEY = web.AppKey("hermes_nb_settings", Settings)
REQUESTS_KEY = web.AppKey("hermes_nb_requests", list)
SCENARIO_KEY = web.RequestKey("hermes_nb_scenario", str)
#: ``concurrency-limited``: the chat requests in flight (one counter per app)
IN_FLIGHT_KEY = web.AppKey("hermes_nb_in_flight", list)


@dataclass(slots=True)
class RecordedRequest:
    """One request as the emulator received it (Authorization redacted)."""

    method: str
    path: str
    query: str
    #: lower-cased names, sensitive values redacted (``Bearer <redacted>``)
    headers: dict[str, str]
    #: the scenario in effect (default or the per-request header)
    scenario: str
    #: the parsed JSON body, when the handler read one that parsed
    json: Any = None
    #: bytes read from the body (None: the body was never read, e.g. a 404 before forwarding)
    body_size: int | None = None
    #: response status (set once the handler finished; None while still streaming)
    status: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


RECORD_KEY = web.RequestKey("hermes_nb_record", RecordedRequest)
#: secret-shaped values (``sk-…``, JWTs, bearer values) in a query string are not recorded
_SHAPES = Redactor()


def _proxy_error(status: int, message: str, code: str) -> web.Response:
    """The real proxy's ``_json_error``."""
    return web.json_response({"error": {"message": message, "type": code, "code": code}}, status=status)


def _scenario_of(request: web.Request) -> str:
    return request.get(SCENARIO_KEY, request.app[SETTINGS_KEY].scenario)


def _refusal(headers: Any) -> str | None:
    """The local-only guard's error code for a request's headers, None when it passes (a 127.0.0.1 bind)."""
    host = headers.get("Host") or ""
    try:
        parts = urlsplit("//" + host)
        port = parts.port or 80
    except ValueError:
        return "host_not_allowed"
    if any(ch in host for ch in "@/\\?# \t") or (parts.hostname or "").rstrip(".") not in _LOCAL_NAMES:
        return "host_not_allowed"
    origin = headers.get("Origin")
    if origin is not None:
        seen = urlsplit(origin) if "://" in origin else None
        try:
            if seen is None or seen.scheme != "http" or (seen.hostname, seen.port or 80) != (parts.hostname, port):
                return "origin_not_allowed"
        except ValueError:
            return "origin_not_allowed"
    site = headers.get("Sec-Fetch-Site")
    return "origin_not_allowed" if site is not None and site.strip().lower() not in ("none", "same-origin") else None


@web.middleware
async def _local_only(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                      ) -> web.StreamResponse:
    code = _refusal(request.headers)
    return _proxy_error(403, GUARD_MESSAGE, code) if code else await handler(request)


def _unknown_scenario(request: web.Request) -> Reply | None:
    """400 for a header naming no scenario (or a proxy-only one sent to the upstream profile)."""
    name = (request.headers.get(SCENARIO_HEADER) or "").strip()
    upstream = request.app[SETTINGS_KEY].profile == "upstream"
    if not name or (name in ALL_SCENARIOS and not (upstream and name in PROXY_SCENARIOS)):
        return None
    known = [s for s in ALL_SCENARIOS if not (upstream and s in PROXY_SCENARIOS)]
    msg = f"Unknown emulator scenario {name!r} for the {request.app[SETTINGS_KEY].profile} profile. " \
          f"Known: {', '.join(known)}"
    # which profile answered: behind a real proxy (the rig) it is ``upstream``, and the proxy is the target
    return json_reply(400, c.envelope(msg, "invalid_request_error", "unknown_scenario"),
                      {PROFILE_HEADER: request.app[SETTINGS_KEY].profile})


def _proxy_fault(scenario: str) -> web.Response | None:
    """The real proxy's own answers when its upstream cannot be reached (502) or times out (504)."""
    if scenario == "upstream-unreachable":
        return _proxy_error(502, UNREACHABLE_MESSAGE, "upstream_unreachable")
    if scenario == "upstream-timeout":
        return _proxy_error(504, "upstream request timed out", "upstream_timeout")
    return None


async def _read_body(request: web.Request) -> bytes:
    raw = await request.read()  # raises HTTPRequestEntityTooLarge (413 text/plain) over client_max_size
    record: RecordedRequest = request[RECORD_KEY]
    record.body_size = len(raw)
    try:
        record.json = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError):
        record.json = None
    return raw


@web.middleware
async def _observe(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> web.StreamResponse:
    """Record the request, pick its scenario, log one line when it ends."""
    app = request.app
    header = (request.headers.get(SCENARIO_HEADER) or "").strip()
    scenario = header if header in ALL_SCENARIOS else app[SETTINGS_KEY].scenario
    request[SCENARIO_KEY] = scenario
    record = RecordedRequest(request.method, request.path, _SHAPES.text(request.query_string),
                             redact_headers(request.headers), scenario)
    request[RECORD_KEY] = record
    app[REQUESTS_KEY].append(record)
    loop = asyncio.get_running_loop()
    started = loop.time()
    status: int | None = None
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        record.status = status
        logger.info("%s %s %s -> %s scenario=%s %.1fms", app[SETTINGS_KEY].profile, request.method, request.path,
                    status if status is not None else "aborted", scenario, (loop.time() - started) * 1000)


@web.middleware
async def _capacity(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
    """``concurrency-limited``: a chat request beyond ``max_concurrent`` in flight is answered as ``rate-limited``
    (429 with Retry-After); the others count as in flight until their answer is written."""
    if request[SCENARIO_KEY] != "concurrency-limited" or request.method != "POST" \
            or not request.path.endswith("/chat/completions"):
        return await handler(request)
    in_flight = request.app[IN_FLIGHT_KEY]
    if in_flight[0] >= request.app[SETTINGS_KEY].max_concurrent:
        request[SCENARIO_KEY] = "rate-limited"
        request[RECORD_KEY].extra["over_capacity"] = True
        return await handler(request)
    in_flight[0] += 1
    try:
        return await handler(request)
    finally:
        in_flight[0] -= 1


@web.middleware
async def _minimal_scenario(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                            ) -> web.StreamResponse:
    """The minimal profile knows one scenario; naming another is a 400 ``unknown_scenario``, as on every
    profile, so :func:`hermes_nb.target.emulator_evidence` tells it from a real upstream."""
    name = (request.headers.get(SCENARIO_HEADER) or "").strip()
    if name and name != "ok":
        msg = f"Unknown emulator scenario {name!r} for the minimal profile. Known: ok"
        return web.json_response(c.envelope(msg, "invalid_request_error", "unknown_scenario"), status=400)
    return await handler(request)


def _upstream_answer(settings: Settings, scenario: str, rel: str, method: str, raw: bytes) -> Reply:
    """The upstream's answer: the OpenAI routes (:func:`upstream_reply`) and the Responses API (:mod:`.responses`),
    stretched over time by the ``slow-answer`` scenario (:mod:`.trouble`)."""
    if rel == RESPONSES_ROUTE:
        reply = responses_reply(settings, scenario, raw) if method == "POST" else method_not_allowed(method)
    else:
        reply = upstream_reply(settings, scenario, rel, method, raw)
    return stretch(reply, scenario, rel, settings.answer_s)


def _make_handlers(settings: Settings) -> dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]]:
    fronted = provider_info(settings.provider)
    assert fronted is not None
    allowed_paths = fronted.allowed_paths
    allowed = ", ".join(sorted(allowed_paths))

    async def health(request: web.Request) -> web.Response:
        return web.json_response({
            "status": "ok", "upstream": fronted.display_name, "authenticated": _scenario_of(request) != "auth-stale",
        })

    async def forward(request: web.Request, rel: str, *, proxied: bool) -> web.StreamResponse:
        """An allowed route on a proxy profile: credential state, body, the proxy's own faults, the upstream."""
        scenario = _scenario_of(request)
        if scenario == "auth-stale":
            return _proxy_error(401, AUTH_STALE_MESSAGES[settings.provider], "upstream_auth_failed")
        raw = await _read_body(request)  # the real proxy reads the body before it calls the upstream
        fault = _proxy_fault(scenario)
        if fault is not None:
            return fault
        reply = _unknown_scenario(request) or _upstream_answer(settings, scenario, rel, request.method, raw)
        return await answer(request, settings, scenario, reply, proxied=proxied)

    async def hermes_agent(request: web.Request) -> web.StreamResponse:
        rel = "/" + request.match_info.get("tail", "").lstrip("/")
        if rel not in allowed_paths:
            return _proxy_error(404, f"Path /v1{rel} is not forwarded by this proxy. Allowed: {allowed}",
                                "path_not_allowed")
        return await forward(request, rel, proxied=True)

    async def seed(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        if auth is None:
            return _proxy_error(401, "Missing Authorization header. Send `Authorization: Bearer <any value>`.",
                                "missing_authorization")
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return _proxy_error(401, "Malformed Authorization header. Expected `Bearer <any value>`.",
                                "invalid_authorization")
        path = request.path
        rel = path[3:] if path.startswith("/v1/") else None
        if rel not in allowed_paths:
            return _proxy_error(404, f"Path {path} is not forwarded by this proxy. Allowed: {allowed}",
                                "path_not_allowed")
        return await forward(request, rel, proxied=False)

    async def upstream(request: web.Request) -> web.StreamResponse:
        path = request.path
        if not path.startswith("/v1/"):
            msg = f"Invalid URL ({request.method} {path})"
            return web.json_response(c.envelope(msg, "invalid_request_error", None, with_param=True), status=404)
        rel = path[3:]
        raw = b""
        if rel in UPSTREAM_ROUTES or (rel == RESPONSES_ROUTE and request.method == "POST"):
            raw = await _read_body(request)
        reply = _unknown_scenario(request) or _upstream_answer(settings, _scenario_of(request), rel,
                                                               request.method, raw)
        return await answer(request, settings, _scenario_of(request), reply, proxied=False)

    return {"health": health, "hermes-agent": hermes_agent, "seed": seed, "upstream": upstream}


def create_app(
    *,
    profile: str = "hermes-agent",
    scenario: str = "ok",
    seed: int = 0,
    models: list[str] | tuple[str, ...] | None = None,
    delay_s: float = 0.05,
    retry_after: int = 2,
    first_delta_s: float = 0.1,
    token_interval_s: float = 0.01,
    max_concurrent: int = 4,
    requests: list[RecordedRequest] | None = None,
    provider: str = "nous",
    first_byte_s: float = 6.0,
    answer_s: float = 25.0,
    reasoning_tokens: int = 0,
    stall_s: float = 0.0,
    trailer_s: float = 0.0,
    local_only: bool = False,
) -> web.Application:
    """Build the emulator application (not started). ``requests`` receives a :class:`RecordedRequest` per request.

    ``provider``: what the proxy profiles front (``nous``, ``xai``: :data:`hermes_nb.core.providers.PROXY_PROVIDERS`);
    ``local_only``: hermes-agent 0.22's guard before every route of a proxy profile.
    """
    check_profile(profile, scenario, provider)
    model_ids = tuple(models) if models else c.MODELS_BY_PROVIDER[provider]
    settings = Settings(profile=profile, scenario=scenario, seed=seed, models=model_ids, delay_s=delay_s,
                        retry_after=retry_after, first_delta_s=first_delta_s, token_interval_s=token_interval_s,
                        max_concurrent=max_concurrent, provider=provider, first_byte_s=first_byte_s,
                        answer_s=answer_s, reasoning_tokens=reasoning_tokens, stall_s=stall_s, trailer_s=trailer_s)
    max_size = UPSTREAM_MAX_BYTES if profile == "upstream" else MAX_REQUEST_BYTES
    if profile == "minimal":
        from .minimal import create_minimal_app

        app = create_minimal_app(models=models, seed=seed, middlewares=[_observe, _minimal_scenario])
    else:
        guard = [_local_only] if local_only and profile in ("hermes-agent", "seed") else []
        app = web.Application(client_max_size=max_size, middlewares=[_observe, *guard, _capacity])
    app[SETTINGS_KEY] = settings
    app[IN_FLIGHT_KEY] = [0]
    app[REQUESTS_KEY] = requests if requests is not None else []
    closing = asyncio.Event()
    app[CLOSING_KEY] = closing

    async def _on_shutdown(_app: web.Application) -> None:
        closing.set()

    app.on_shutdown.append(_on_shutdown)
    if profile == "minimal":
        return app
    handlers = _make_handlers(settings)
    if profile == "hermes-agent":
        app.router.add_get("/health", handlers["health"])
        app.router.add_route("*", "/v1/{tail:.*}", handlers["hermes-agent"])
    else:
        app.router.add_route("*", "/{tail:.*}", handlers[profile])
    return app
