"""The seed's wire-format spike as code: probe every route, the auth handoff and the failure shapes.

:func:`probe` reproduces seed §3–5 and §11 against one endpoint and returns a
:class:`WireReport`. Every request goes through
:meth:`hermes_nb.client.HermesClient.request` (the one request builder);
bodies ask for ``max_tokens`` 8 so probing stays cheap. HTTP and network
failures never raise: an unreachable, hanging or wrong endpoint gives a
report whose routes say what happened, within the overall deadline.

Comparison with a contract file lives in :mod:`hermes_nb.wire_contract`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from .config import DEFAULT_MODEL, HermesProxyRuntimeConfig
from .records import Exchange
from .redact import Redactor

__all__ = [
    "ROUTES",
    "RouteSpec",
    "RouteResult",
    "AuthCase",
    "Drift",
    "WireReport",
    "probe",
    "probe_endpoint",
    "route_outcome",
    "server_product",
]

Outcome = Literal[
    "forwarded", "auth_failed", "path_not_allowed", "not_found", "unauthorized", "rejected", "local", "error",
    "bad_response", "unreachable", "timeout", "transport_error", "skipped",
]
StreamShape = Literal["json", "sse", "text", "none"]
#: the proxy's own error types (anything else under /v1 came from the upstream)
PROXY_ERROR_TYPES = frozenset({"upstream_unreachable", "upstream_timeout", "proxy_error"})
UNKNOWN_V1_PATH = "/hermes-nb-probe/unknown"
LARGE_BODY_BYTES = 1_500_000
_CONNECT_KINDS = frozenset({"connect_refused", "dns", "connect_error"})
_TIMEOUT_KINDS = frozenset({"connect_timeout", "read_timeout", "deadline"})
_RATE_RE = re.compile(r"^(x-)?(rate-?limit|ratelimit)|^retry-after(-ms)?$")


@dataclass(frozen=True)
class RouteSpec:
    """One probed route. ``path`` is relative to the endpoint, or to its origin when ``root``."""

    name: str
    method: str
    path: str
    root: bool = False
    body: str | None = None  # "chat" | "chat_stream" | "chat_large" | "completions" | "embeddings"
    sse: bool = False
    #: tells routes with the same method and path apart in drift lines
    variant: str = ""

    @property
    def display_path(self) -> str:
        return self.path if self.root else "/v1" + self.path

    @property
    def label(self) -> str:
        """``POST /v1/chat/completions (stream)``: how drift lines name the route."""
        return f"{self.method} {self.display_path}" + (f" ({self.variant})" if self.variant else "")


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("chat", "POST", "/chat/completions", body="chat"),
    RouteSpec("chat_stream", "POST", "/chat/completions", body="chat_stream", sse=True, variant="stream"),
    # 1.5 MB: over aiohttp's 1 MiB default body cap, under the proxy's 10 MB one (hermes-agent >= 0.18.1)
    RouteSpec("chat_large", "POST", "/chat/completions", body="chat_large", variant="1.5 MB body"),
    RouteSpec("completions", "POST", "/completions", body="completions"),
    RouteSpec("embeddings", "POST", "/embeddings", body="embeddings"),
    RouteSpec("models", "GET", "/models"),
    RouteSpec("v1_health", "GET", "/health"),
    RouteSpec("root", "GET", "/", root=True),
    RouteSpec("health", "GET", "/health", root=True),
    # a streaming request the proxy itself refuses: the shape of a proxy-layer stream failure
    RouteSpec("unknown_v1", "POST", UNKNOWN_V1_PATH, body="chat_stream", sse=True),
)
#: auth handoff cases on ``GET /v1/models``: header value sent (False = no header)
AUTH_CASES: tuple[tuple[str, bool | str], ...] = (
    ("none", False),
    ("malformed", "Basic cHJvYmU6cHJvYmU="),
    ("bearer", True),
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RouteResult(_Model):
    name: str
    method: str
    path: str
    status: int | None = None
    content_type: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    #: json-envelope | json | sse | html | text | empty | none
    body_kind: str = "none"
    #: first line of a non-JSON body (e.g. ``404: Not Found``)
    body_excerpt: str | None = None
    #: sorted top-level keys of a JSON object body
    json_keys: list[str] | None = None
    outcome: Outcome = "skipped"
    server: str | None = None
    #: transport failure kind when there was no HTTP answer
    transport_error: str | None = None
    #: ``data: [DONE]`` seen (streams)
    done: bool | None = None
    elapsed_s: float = 0.0


class AuthCase(_Model):
    case: Literal["none", "malformed", "bearer"]
    #: what was sent, redacted (``(none)``, ``Basic <redacted>``, ``Bearer probe``)
    header: str
    status: int | None = None
    error_type: str | None = None
    outcome: Outcome = "skipped"


class Drift(_Model):
    field: str
    expected: Any = None
    observed: Any = None

    def __str__(self) -> str:
        return f"{self.field}: {_fmt(self.expected)} → {_fmt(self.observed)}"


def _fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


class WireReport(_Model):
    endpoint: str
    #: stale (forwarded routes answer upstream_auth_failed), live (they answer 2xx), unreachable, unknown
    state: Literal["stale", "live", "unreachable", "unknown"] = "unknown"
    reachable: bool = False
    routes: list[RouteResult] = Field(default_factory=list)
    auth: list[AuthCase] = Field(default_factory=list)
    #: None when it could not be told (endpoint unreachable)
    bearer_required: bool | None = None
    stream_failure_shape: StreamShape = "none"
    server: str | None = None
    #: product names without versions (``Python aiohttp``): what contracts compare
    server_product: str | None = None
    cors_headers: list[str] = Field(default_factory=list)
    rate_limit_headers: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    drift: list[Drift] = Field(default_factory=list)
    elapsed_s: float = 0.0

    def route(self, name: str) -> RouteResult | None:
        return next((r for r in self.routes if r.name == name), None)

    def summary(self) -> dict[str, Any]:
        """The ``--json`` object: routes, bearer_required, stream_failure_shape, server, drift, …"""
        return self.model_dump(mode="json")


# --------------------------------------------------------------------------- classification


def server_product(server: str | None) -> str | None:
    """``Python/3.11 aiohttp/3.14.5`` → ``Python aiohttp`` (versions vary with the install, not the proxy)."""
    if not server:
        return None
    names = [tok.split("/", 1)[0] for tok in server.split() if tok and not tok.startswith("(")]
    return " ".join(names) or None


def _body_kind(ex: Exchange) -> str:
    if ex.status is None:
        return "none"
    if ex.streamed or ex.content_type == "text/event-stream":
        return "sse"
    if ex.json_body is not None:
        enveloped = isinstance(ex.json_body, dict) and "error" in ex.json_body
        return "json-envelope" if ex.envelope is not None and enveloped else "json"
    text = (ex.body_text or "").strip()
    if not text:
        return "empty"
    if ex.content_type == "text/html" or text[:1] == "<":
        return "html"
    return "text"


def route_outcome(ex: Exchange, *, root: bool, expect_sse: bool = False) -> Outcome:
    """What the endpoint did with one request (see docs/wire-contract.md for the vocabulary)."""
    if ex.status is None:
        failure = ex.transport_error
        kind = failure.kind if failure else "other"
        if failure is not None and failure.phase == "connect" and kind in _CONNECT_KINDS:
            return "unreachable"
        if kind in _TIMEOUT_KINDS:
            return "timeout"
        return "transport_error"
    env = ex.envelope
    etype = (env.type or env.code_str) if env is not None else None
    if etype == "path_not_allowed":
        return "path_not_allowed"
    if etype == "upstream_auth_failed":
        return "auth_failed"
    if etype in PROXY_ERROR_TYPES:
        return "error"
    kind = _body_kind(ex)
    if ex.status == 404 and kind != "json-envelope":
        return "not_found"
    if ex.status == 413:
        return "rejected"
    if ex.status in (401, 403):
        return "unauthorized"
    if 200 <= ex.status < 300:
        if root:
            return "local"
        wanted = ("sse",) if expect_sse else ("json",)
        return "forwarded" if kind in wanted or (expect_sse and kind == "json") else "bad_response"
    return "error" if root else "forwarded"


def _result(spec: RouteSpec, ex: Exchange, elapsed: float, redactor: Redactor) -> RouteResult:
    env = ex.envelope
    kind = _body_kind(ex)
    excerpt = None
    if kind in ("text", "html"):
        excerpt = redactor.text((ex.body_text or "").strip().splitlines()[0][:120])
    keys = sorted(ex.json_body) if isinstance(ex.json_body, dict) else None
    return RouteResult(
        name=spec.name, method=spec.method, path=httpx.URL(ex.request.url).path or "/",
        status=ex.status, content_type=ex.content_type,
        error_type=env.type if env else None, error_code=env.code_str if env else None,
        error_message=redactor.text(env.message) if env and env.message else None,
        body_kind=kind, body_excerpt=excerpt, json_keys=keys,
        outcome=route_outcome(ex, root=spec.root, expect_sse=spec.sse),
        server=_headers(ex).get("server"),
        transport_error=ex.transport_error.kind if ex.transport_error else None,
        done=ex.done if spec.sse and ex.streamed else None, elapsed_s=round(elapsed, 3),
    )


def _headers(ex: Exchange) -> dict[str, str]:
    return {k.lower(): v for k, v in ex.headers.items()}


def _stream_failure_shape(results: list[RouteResult]) -> StreamShape:
    for name in ("chat_stream", "unknown_v1"):
        r = next((x for x in results if x.name == name), None)
        if r is None or r.status is None or 200 <= r.status < 300:
            continue
        return {"sse": "sse", "json": "json", "json-envelope": "json", "text": "text", "html": "text"}.get(
            r.body_kind, "none")  # type: ignore[return-value]
    return "none"


def _bearer_required(cases: list[AuthCase]) -> bool | None:
    by = {c.case: c for c in cases}
    bearer, none = by.get("bearer"), by.get("none")
    if bearer is None or none is None or bearer.status is None or none.status is None:
        return None
    rejected = [
        c for c in (none, by.get("malformed"))
        if c is not None and c.status in (401, 403) and (c.status, c.error_type) != (bearer.status, bearer.error_type)
    ]
    return bool(rejected)


def _state(results: list[RouteResult]) -> str:
    if not any(r.status is not None for r in results):
        return "unreachable"
    forwarded = [r for r in results if r.name in ("chat", "models")]
    if forwarded and all(r.outcome == "auth_failed" for r in forwarded):
        return "stale"
    if forwarded and all(r.outcome == "forwarded" and r.status and 200 <= r.status < 300 for r in forwarded):
        return "live"
    return "unknown"


def _warnings(report: WireReport) -> list[str]:
    out: list[str] = []
    outcomes = {r.outcome for r in report.routes}
    if not report.reachable and outcomes <= {"timeout", "skipped"}:
        out.append(f"{report.endpoint} accepts connections but never answers: the endpoint hangs")
    elif not report.reachable:
        first = report.routes[0] if report.routes else None
        why = first.transport_error if first else "no answer"
        out.append(f"endpoint unreachable ({why}): is `hermes proxy start` running at {report.endpoint}?")
    elif all(r.outcome == "not_found" for r in report.routes if r.name in ("chat", "models", "completions")):
        out.append("every forwarded route answered a plain 404: does the endpoint miss its /v1 base path?")
    if any(r.body_kind == "html" for r in report.routes):
        out.append("the endpoint answers HTML: is this a Hermes proxy?")
    if report.reachable and "timeout" in outcomes:
        out.append("some requests timed out: the endpoint hangs or is very slow")
    if "skipped" in outcomes:
        out.append("the probe deadline ran out before every route was probed")
    return out


# --------------------------------------------------------------------------- probing


@dataclass
class _Budget:
    deadline: float
    per_request_s: float
    skipped: list[str] = field(default_factory=list)

    def next(self) -> float | None:
        left = self.deadline - time.monotonic()
        return None if left <= 0.05 else min(self.per_request_s, left)


def _body(kind: str | None, model: str, config: HermesProxyRuntimeConfig) -> Any:
    from .wire import chat_request_body

    if kind in ("chat", "chat_stream", "chat_large"):
        text = "Reply with: pong" if kind != "chat_large" else "Reply with: pong. " + "x" * LARGE_BODY_BYTES
        return chat_request_body(config, [{"role": "user", "content": text}], stream=kind == "chat_stream")
    if kind == "completions":
        return {"model": model, "prompt": "ping", "max_tokens": config.max_tokens}
    if kind == "embeddings":
        return {"model": model, "input": "ping"}
    return None


def probe(
    endpoint: str,
    *,
    auth_token: str = "probe",
    model: str = DEFAULT_MODEL,
    transport: httpx.BaseTransport | None = None,
    deadline_s: float = 30.0,
    request_deadline_s: float = 5.0,
    headers: dict[str, str] | None = None,
) -> WireReport:
    """Probe ``endpoint`` (``http://host:port/v1``); never raises for HTTP/network failures.

    ``deadline_s`` bounds the whole probe; each request gets at most
    ``request_deadline_s``. Requests the budget cannot afford are marked ``skipped``.
    Raises :class:`~hermes_nb.errors.ConfigError` only for an invalid endpoint URL.
    """
    from .client import HermesClient
    from .config import validate_config

    config = validate_config({"endpoint": endpoint, "model": model, "auth_token": auth_token, "max_tokens": 8,
                              "temperature": 0, "stream": False, "extra_headers": dict(headers or {})},
                             where="probe")
    redactor = Redactor(config.secrets())
    started = time.monotonic()
    budget = _Budget(started + deadline_s, request_deadline_s)
    results: list[RouteResult] = []
    cases: list[AuthCase] = []
    seen: dict[str, str] = {}
    with HermesClient(config, transport=transport, connect_timeout_s=min(5.0, request_deadline_s)) as client:

        def call(spec: RouteSpec, auth: bool | str = True) -> tuple[Exchange | None, float]:
            allowed = budget.next()
            if allowed is None:
                return None, 0.0
            t0 = time.monotonic()
            ex = client.request(spec.method, spec.path, json=_body(spec.body, model, config), auth=auth,
                                root=spec.root, deadline_s=allowed, sse=spec.sse)
            seen.update(_headers(ex))
            return ex, time.monotonic() - t0

        for spec in ROUTES:
            ex, took = call(spec)
            if ex is None:
                results.append(RouteResult(name=spec.name, method=spec.method, path=spec.display_path,
                                           outcome="skipped", transport_error="deadline"))
            else:
                results.append(_result(spec, ex, took, redactor))
        models = next(s for s in ROUTES if s.name == "models")
        for case, auth in AUTH_CASES:
            ex, _ = call(models, auth)
            shown = "(none)" if auth is False else ("Bearer " + auth_token if auth is True else auth.split(" ")[0] + " <redacted>")
            if ex is None:
                cases.append(AuthCase(case=case, header=redactor.text(shown)))  # type: ignore[arg-type]
                continue
            env = ex.envelope
            cases.append(AuthCase(case=case, header=redactor.text(shown), status=ex.status,  # type: ignore[arg-type]
                                  error_type=(env.type or env.code_str) if env else None,
                                  outcome=route_outcome(ex, root=False)))
    health = next((r for r in results if r.name == "health" and r.server), None)
    server = health.server if health else next((r.server for r in results if r.server), None)
    report = WireReport(
        endpoint=endpoint, routes=results, auth=cases, reachable=any(r.status is not None for r in results),
        bearer_required=_bearer_required(cases), stream_failure_shape=_stream_failure_shape(results),
        server=server, server_product=server_product(server),
        cors_headers=sorted(h for h in seen if h.startswith("access-control-")),
        rate_limit_headers=sorted(h for h in seen if _RATE_RE.match(h)),
        elapsed_s=round(time.monotonic() - started, 3),
    )
    report.state = _state(results)  # type: ignore[assignment]
    report.warnings = _warnings(report)
    return report


#: ``hermes_nb.probe_endpoint`` (the package attribute ``probe`` is this module)
probe_endpoint = probe
