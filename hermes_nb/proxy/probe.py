"""The seed's wire-format spike as code: probe every route, the auth handoff and the failure shapes.

:func:`probe` reproduces seed §3–5 and §11 against one endpoint and returns a
:class:`~hermes_nb.proxy.report.WireReport`. Every request goes through
:meth:`hermes_nb.wire.client.HermesClient.request` (the one request builder);
bodies ask for ``max_tokens`` 8 so probing stays cheap. HTTP and network
failures never raise: an unreachable, hanging or wrong endpoint gives a
report whose routes say what happened, within the overall deadline.

The report's records and the pure reading of each answer live in
:mod:`hermes_nb.proxy.report`; comparison with a contract file lives in
:mod:`hermes_nb.proxy.contracts`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import httpx
from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, merge_runtime_config
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, DEFAULT_MODEL
from hermes_nb.core.records import Exchange, StreamTimeline
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt
from hermes_nb.proxy.report import (
    RATE_LIMIT_HEADER_RE,
    AuthCase,
    AuthCaseName,
    RouteResult,
    WireReport,
    bearer_required,
    floor_missing,
    report_state,
    report_warnings,
    response_headers,
    server_product,
    sse_events,
    stream_failure_shape,
)
from hermes_nb.target import allowed_paths_of, detect_provider
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import answered_by, body_kind, ended, hint, read, route_outcome

__all__ = ["ProbeSpec", "REFERENCE_CONTRACT", "ROUTES", "LOCAL_ROUTES", "AUTH_CASES", "RouteSpec", "probe", "probe_config"]

_CLI = frozenset({"cli"})
#: what a probe compares with unless told otherwise: the newest release recorded from the package index
REFERENCE_CONTRACT = "hermes-agent-0.19.0"


class ProbeSpec(ConfigOptions):
    """The probe's options (``hermes-nb probe``, ``%hermes_probe``, the wire_format_spike notebook)."""

    compare: str | None = Field(REFERENCE_CONTRACT, description="the contract to compare with: a shipped name (the "
                                                                "detected provider's), seed, or a file")
    state: Annotated[Literal["stale", "live"] | None, Opt(faces=_CLI)] = Field(
        None, description="the contract section to compare with (default: the state the probe detects)")
    out: Annotated[str | None, Opt(faces=_CLI)] = Field(None, description="also write the report (JSON) here")
    write_contract: Annotated[str | None, Opt(faces=_CLI)] = Field(
        None, description="write the observed contract (this probe as its only state section) here")
    budget_s: float = Field(30.0, gt=0, description="the longest the whole probe may take")
    request_budget_s: float = Field(5.0, gt=0, description="the longest one probed request may take")
    scenario: Annotated[str, Opt(faces=frozenset({"magic", "notebook"}))] = Field(
        "ok", description="the embedded emulator's scenario (only when no endpoint is configured)")

UNKNOWN_V1_PATH = "/hermes-nb-probe/unknown"
LARGE_BODY_BYTES = 1_500_000


@dataclass(frozen=True)
class RouteSpec:
    """One probed route. ``path`` is relative to the endpoint, or to its origin when ``root``."""

    name: str
    method: str
    path: str
    root: bool = False
    #: "chat" | "chat_stream" | "chat_large" | "completions" | "embeddings" | "responses" | "responses_stream"
    body: str | None = None
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


#: the proxy's own routes first (they answer at once, whatever the upstream does), then the forwarded ones
ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("health", "GET", "/health", root=True),
    RouteSpec("root", "GET", "/", root=True),
    RouteSpec("v1_health", "GET", "/health"),
    # a streaming request the proxy itself refuses: the shape of a proxy-layer stream failure
    RouteSpec("unknown_v1", "POST", UNKNOWN_V1_PATH, body="chat_stream", sse=True),
    RouteSpec("chat", "POST", "/chat/completions", body="chat"),
    RouteSpec("chat_stream", "POST", "/chat/completions", body="chat_stream", sse=True, variant="stream"),
    # 1.5 MB: over aiohttp's 1 MiB default body cap, under the proxy's 10 MB one (hermes-agent >= 0.18.1)
    RouteSpec("chat_large", "POST", "/chat/completions", body="chat_large", variant="1.5 MB body"),
    RouteSpec("completions", "POST", "/completions", body="completions"),
    RouteSpec("embeddings", "POST", "/embeddings", body="embeddings"),
    RouteSpec("models", "GET", "/models"),
    # OpenAI's Responses API: forwarded by xai, 404 path_not_allowed on nous (a proxy-owned fact either way)
    RouteSpec("responses", "POST", "/responses", body="responses"),
    RouteSpec("responses_stream", "POST", "/responses", body="responses_stream", sse=True, variant="stream"),
)
#: the routes the proxy answers itself, never its upstream
LOCAL_ROUTES = frozenset({"health", "root", "v1_health", "unknown_v1"})
#: auth handoff cases on ``GET /v1/models``: header value sent (False = no header)
AUTH_CASES: tuple[tuple[AuthCaseName, bool | str], ...] = (
    ("none", False),
    ("malformed", "Basic cHJvYmU6cHJvYmU="),
    ("bearer", True),
)


def _result(spec: RouteSpec, ex: Exchange, elapsed: float, redactor: Redactor) -> RouteResult:
    env = ex.envelope
    kind = body_kind(ex)
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
        answered_by=answered_by(ex, root=spec.root), ended=ended(ex), floor_missing=floor_missing(spec.name, ex),
        server=response_headers(ex).get("server"),
        transport_error=ex.transport_error.kind if ex.transport_error else None,
        done=ex.done if spec.sse and ex.streamed else None, sse_events=sse_events(ex),
        retry_after_s=ex.retry_after_s, elapsed_s=round(elapsed, 3),
    )


def _upstream_slow(ex: Exchange) -> bool:
    """A forwarded request the upstream did not answer, or did not finish answering, within the probe's deadline."""
    failure = ex.transport_error
    return failure is not None and failure.kind in ("read_timeout", "deadline")


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
    if kind in ("chat", "chat_stream", "chat_large"):
        text = "Reply with: pong" if kind != "chat_large" else "Reply with: pong. " + "x" * LARGE_BODY_BYTES
        return chat_request_body(config, [{"role": "user", "content": text}], stream=kind == "chat_stream")
    if kind == "completions":
        return {"model": model, "prompt": "ping", "max_tokens": config.max_tokens}
    if kind == "embeddings":
        return {"model": model, "input": "ping"}
    if kind in ("responses", "responses_stream"):
        return responses_request_body(config, "Reply with: pong", stream=kind == "responses_stream")
    return None


def probe_config(target: HermesProxyRuntimeConfig | str, *, auth_token: str | None = None, model: str | None = None,
                 headers: dict[str, str] | None = None) -> HermesProxyRuntimeConfig:
    """The config the probe sends with: ``target``'s (a resolved config) or, for a bare endpoint, the
    placeholders (bearer ``probe``, :data:`~hermes_nb.core.facts.DEFAULT_MODEL`); bodies kept cheap
    (``max_tokens`` 8, temperature 0, unstreamed unless a route streams). Arguments win."""
    if isinstance(target, str):
        base: dict[str, Any] = {"endpoint": target, "model": DEFAULT_MODEL, "auth_token": "probe"}
    else:
        base = target.to_document(reveal_secrets=True)
    given = {"auth_token": auth_token, "model": model}
    cheap = {"max_tokens": 8, "temperature": 0, "stream": False,
             "extra_headers": {**base.get("extra_headers", {}), **(headers or {})}}
    return merge_runtime_config(base, cheap, {k: v for k, v in given.items() if v is not None}, where="probe")


def probe(
    target: HermesProxyRuntimeConfig | str,
    *,
    auth_token: str | None = None,
    model: str | None = None,
    transport: httpx.BaseTransport | None = None,
    budget_s: float = ProbeSpec.model_fields["budget_s"].default,
    request_budget_s: float = ProbeSpec.model_fields["request_budget_s"].default,
    headers: dict[str, str] | None = None,
    provider: str | None = None,
) -> WireReport:
    """Probe ``target`` (a resolved runtime config, or an endpoint ``http://host:port/v1``); never raises
    for HTTP/network failures.

    The config sent with is :func:`probe_config`'s. ``budget_s`` bounds the whole probe; each request
    gets at most ``request_budget_s``. Requests the budget cannot afford are marked ``skipped``. The
    proxy's own routes go first; once a forwarded request gets no answer within ``request_budget_s``
    (the upstream is slow) or does not finish in it, the remaining forwarded requests are not sent
    (``skipped``, ``upstream_slow``).
    ``provider``: the one expected (default: the config's); the report names the one the proxy says it
    fronts, and a mismatch warns.
    Raises :class:`~hermes_nb.core.errors.ConfigError` only for an invalid endpoint URL and
    :class:`~hermes_nb.core.errors.UsageError` for a budget that is not positive.
    """
    ProbeSpec.build(budget_s=budget_s, request_budget_s=request_budget_s)  # the spec's checks, once

    config = probe_config(target, auth_token=auth_token, model=model, headers=headers)
    endpoint, model, auth_token = config.endpoint, config.model, config.auth_token.get_secret_value()
    redactor = Redactor(config.secrets())
    started = time.monotonic()
    budget = _Budget(started + budget_s, request_budget_s)
    results: list[RouteResult] = []
    cases: list[AuthCase] = []
    seen: dict[str, dict[str, str]] = {"proxy": {}, "upstream": {}}
    connect_s = min(CONNECT_TIMEOUT_S, request_budget_s)
    with HermesClient(config, transport=transport, connect_timeout_s=connect_s) as client:

        def call(spec: RouteSpec, auth: bool | str = True) -> tuple[Exchange | None, float]:
            allowed = budget.next()
            if allowed is None:
                return None, 0.0
            t0 = time.monotonic()
            ex = client.request(spec.method, spec.path, json=_body(spec.body, model, config), auth=auth,
                                root=spec.root, deadline_s=allowed, sse=spec.sse)
            owner = answered_by(ex, root=spec.root)
            if owner is not None:
                seen[owner].update(response_headers(ex))
            return ex, time.monotonic() - t0

        timelines: dict[str, dict[str, Any]] = {}
        exchanges: dict[str, Exchange] = {}
        slow: str | None = None  # the forwarded route the upstream did not answer, or finish, in time
        allowed: list[str] | None = None  # what the proxy says it forwards (its first path_not_allowed)
        for spec in ROUTES:
            forwarded = spec.name not in LOCAL_ROUTES and (allowed is None or spec.path in allowed)
            spare = forwarded and slow is not None
            ex, took = (None, 0.0) if spare else call(spec)
            if ex is None:
                results.append(RouteResult(name=spec.name, method=spec.method, path=spec.display_path,
                                           outcome="skipped", transport_error="upstream_slow" if spare else "deadline"))
                continue
            exchanges[spec.name] = ex
            results.append(_result(spec, ex, took, redactor))
            if allowed is None and results[-1].outcome == "path_not_allowed":
                allowed = allowed_paths_of(results[-1].error_message)
            if ex.streamed and ex.events:
                timelines[spec.name] = StreamTimeline.from_exchange(ex).to_dict()
            if forwarded and _upstream_slow(ex) and any(r.status is not None for r in results):
                slow = spec.name  # the proxy answers, its upstream not in time: spare the rest of the budget
        models = next(s for s in ROUTES if s.name == "models")
        for case, auth in AUTH_CASES:
            ex, _ = (None, 0.0) if slow else call(models, auth)
            shown = ("(none)" if auth is False
                     else "Bearer " + auth_token if auth is True else auth.split(" ")[0] + " <redacted>")
            if ex is None:
                cases.append(AuthCase(case=case, header=redactor.text(shown),
                                      transport_error="upstream_slow" if slow else "deadline"))
                continue
            env = ex.envelope
            cases.append(AuthCase(case=case, header=redactor.text(shown), status=ex.status,
                                  error_type=(env.type or env.code_str) if env else None,
                                  outcome=route_outcome(ex, root=False), answered_by=answered_by(ex, root=False),
                                  transport_error=ex.transport_error.kind if ex.transport_error else None,
                                  retry_after_s=ex.retry_after_s))
    health = next((r for r in results if r.name == "health" and r.server), None)
    server = health.server if health else next((r.server for r in results if r.server), None)
    refused = next((r.error_message for r in results if r.outcome == "path_not_allowed" and r.error_message), None)
    health_ex = exchanges.get("health")
    facts = detect_provider(health=health_ex.json_body if health_ex is not None and health_ex.status == 200 else None,
                            allowed_message=refused, configured=provider or config.provider)
    report = WireReport(
        endpoint=endpoint, routes=results, auth=cases, reachable=any(r.status is not None for r in results),
        bearer_required=bearer_required(cases), stream_failure_shape=stream_failure_shape(results),
        server=server, server_product=server_product(server),
        cors_headers=_cors(seen["proxy"]), rate_limit_headers=_rate_limit(seen["proxy"]),
        relayed_cors_headers=_cors(seen["upstream"]), relayed_rate_limit_headers=_rate_limit(seen["upstream"]),
        elapsed_s=round(time.monotonic() - started, 3),
        provider=facts.provider, provider_source=facts.source, upstream=facts.upstream,
        allowed_paths=allowed_paths_of(refused),
    )
    report.timelines.update(timelines)
    report.state = report_state(results)
    first = next((exchanges[r.name] for r in results if r.name in exchanges and (
        r.outcome in ("unreachable", "timeout", "transport_error", "not_local"))), None)
    if first is not None and report.state in ("unreachable", "not_local"):
        report.action = hint(read(first, endpoint), endpoint=endpoint, provider=report.provider)
    report.warnings = report_warnings(report) + facts.warnings
    return report


def _cors(headers: dict[str, str]) -> list[str]:
    return sorted(h for h in headers if h.startswith("access-control-"))


def _rate_limit(headers: dict[str, str]) -> list[str]:
    return sorted(h for h in headers if RATE_LIMIT_HEADER_RE.match(h))

