"""ONE reading of a response (:func:`read`); the chat verdict, the check's states, the probe's route outcomes and
every operator action are tables over it. Auth and rate limit come from the status and the envelope's codes, never
from message text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import ERROR_PREFIX
from hermes_nb.core.providers import cooldown_note, reauth_hint, start_hint, upstream_down_hint
from hermes_nb.core.records import ErrorEnvelope, Exchange, Outcome, Status
from hermes_nb.wire.sentinel import extract_final_message

AUTH_CODES = frozenset({"upstream_auth_failed", "invalid_api_key", "authentication_error", "unauthorized"})
RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "rate_limited", "too_many_requests"})
MODEL_MISSING_CODES = frozenset({"model_not_found", "model_not_available", "model_unavailable", "invalid_model"})
#: the proxy's own answers when its upstream cannot be reached (502) or does not answer in time (504)
UPSTREAM_DOWN_CODES = frozenset({"upstream_unreachable", "upstream_timeout"})
#: the local-only guard before every route (hermes-agent 0.22): a Host or an Origin it does not serve
GUARD_CODES = frozenset({"host_not_allowed", "origin_not_allowed"})
#: the error types the proxy answers itself (any other envelope under /v1 was relayed from the upstream)
PROXY_ERROR_TYPES = frozenset({"upstream_unreachable", "upstream_timeout", "proxy_error"})
PROXY_OWN_TYPES = PROXY_ERROR_TYPES | GUARD_CODES | {"path_not_allowed", "upstream_auth_failed"}

#: each kind of answer: (a chat exchange's verdict, its reason, the adapter check's state)
_KINDS: dict[str, tuple[Status, str, str]] = {
    "refused": ("blocked", "unreachable", "unreachable"), "dns": ("failed", "dns", "misconfigured"),
    "connect_timeout": ("blocked", "connect_timeout", "unreachable"),
    "tls_mismatch": ("failed", "unreachable", "misconfigured"), "connect_error": ("failed", "unreachable", "error"),
    "deadline": ("failed", "deadline", "slow"), "read_timeout": ("failed", "read_timeout", "slow"),
    "broken": ("failed", "stream_broken", "error"), "not_local": ("blocked", "not_local", "not_local"),
    "auth": ("blocked", "auth", "locked"), "rate_limited": ("blocked", "rate_limited", "rate_limited"),
    "upstream_down": ("failed", "upstream_unreachable", "error"), "ok": ("passed", "ok", "ready"),
    "path_not_allowed": ("failed", "path_not_allowed", "misconfigured"),
    "model_missing": ("blocked", "model_missing", "misconfigured"),
    "not_found": ("failed", "http_error", "misconfigured"), "too_large": ("failed", "http_error", "error"),
    "http_error": ("failed", "http_error", "error"), "in_band_error": ("failed", "in_band_error", "error"),
    "protocol_error": ("failed", "protocol_error", "error"), "not_openai": ("failed", "protocol_error", "error"),
}
Kind = Literal["refused", "connect_timeout", "dns", "tls_mismatch", "connect_error", "deadline", "read_timeout",
               "broken", "not_local", "auth", "rate_limited", "upstream_down", "path_not_allowed", "model_missing",
               "not_found", "too_large", "http_error", "in_band_error", "protocol_error", "not_openai", "ok"]
CHECK_STATES: dict[str, str] = {kind: state for kind, (_, _, state) in _KINDS.items()}
#: what OpenSSL says when the server on an https endpoint's port answers plain http (1.1/3.0, then 3.2+)
_PLAIN_HTTP_MARKERS = ("wrong version number", "record layer failure", "packet length too long", "http request")
#: the one-line error of a failed or blocked chat exchange, per kind (``… in band``: inside a 200 stream)
_ERRORS = {
    "refused": "endpoint unreachable: {endpoint} (connection refused; is `hermes proxy start` running?)",
    "connect_timeout": "connect to {endpoint} timed out (is `hermes proxy start` running?)",
    "dns": "cannot resolve the host of {endpoint}: {detail} (wrong endpoint?)",
    "tls_mismatch": "cannot connect to {endpoint}: {detail} ({action})",
    "connect_error": "cannot connect to {endpoint}: {detail}",
    "deadline": "request cut after {cap}: {detail}{partial}",
    "read_timeout": "request timed out after {timeout_ms} ms {silence}: {detail}{partial}",
    "broken": "connection broken {where} ({failure}): {detail}{partial}",
    "not_local": "HTTP 403 {code}: the proxy refused this request before any route: {detail}",
    "auth in band": "upstream auth failed inside the stream{said}: {detail} ({action}){partial}",
    "auth": "HTTP {status} upstream auth failed: {detail} ({action})",
    "rate_limited in band": "rate limited inside the stream{said}: {detail}{partial}",
    "rate_limited": "HTTP {status} rate limited: {detail}{after}",
    "upstream_down": "HTTP {status} {upstream}: the proxy could not reach its upstream: {detail}",
    "path_not_allowed": "HTTP 404 path_not_allowed: {detail} (configuration error or proxy version mismatch)",
    "model_missing": 'model "{model}" not available on this proxy: {detail}',
    "in_band_error": "error inside the 200 stream{said}: {detail}{partial}",
    "protocol_error": "malformed stream: {first}{more}{partial}",
    "not_openai": "HTTP {status} with a body that is neither JSON nor an event stream ({content_type}): {detail}",
    "not_found": "HTTP {status}: {detail} (is the endpoint's path right? it must include /v1)",
}
#: the operator actions that need nothing but the kind
_HINTS = {
    "dns": "check runtime_config.endpoint (the proxy listens on http://127.0.0.1:8645/v1 by default)",
    "connect_error": "check runtime_config.endpoint",
    "path_not_allowed": "check that the endpoint ends with /v1 and that this hermes release forwards the route",
    "model_missing": "pick a model the provider offers (GET /v1/models)",
    "not_found": "the endpoint's path probably lacks /v1 (e.g. http://127.0.0.1:8645/v1)",
    "not_openai": "is something else listening on this port? the proxy answers JSON or an event stream",
}


@dataclass(frozen=True)
class Reading:
    kind: Kind
    status: int | None
    envelope: ErrorEnvelope | None
    codes: frozenset[str]
    retry_after_s: float | None
    #: the envelope's message, else a body excerpt, else the transport failure's message
    detail: str
    in_band: bool = False
    phase: str | None = None

    @property
    def code(self) -> str | None:
        env = self.envelope
        return str(env.type or env.code) if env is not None and (env.type or env.code is not None) else None


def _short(text: str, limit: int = 500) -> str:
    """One line (whitespace collapsed: an HTML error page is one line too), at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _detail(ex: Exchange) -> str:
    env = ex.envelope
    if env is not None and env.message:
        return _short(env.message)
    if env is not None and (env.type or env.code is not None):
        return str(env.type or env.code)
    if ex.transport_error is not None and ex.status is None:
        return ex.transport_error.message
    body = (ex.body_text or "").strip()
    return f"body: {_short(body, 200)}" if body else "no body"


def _in_band_status(env: ErrorEnvelope | None) -> int | None:
    try:
        return int(str(env.status).strip()) if env is not None and env.status is not None else None
    except ValueError:
        return None


def _transport_kind(ex: Exchange, endpoint: str) -> Kind:
    failure = ex.transport_error
    if failure is None:
        return "broken"
    kind = failure.kind
    if kind == "connect_refused":
        return "refused"
    if kind in ("connect_timeout", "dns", "deadline", "read_timeout"):
        return kind
    if kind == "connect_error":
        tls = endpoint.lower().startswith("https://") and any(m in failure.message.lower()
                                                                for m in _PLAIN_HTTP_MARKERS)
        return "tls_mismatch" if tls else "connect_error"
    if kind == "other" and failure.phase == "connect":
        return "connect_error"
    return "broken"


def read(ex: Exchange, endpoint: str | None = None) -> Reading:
    env = ex.envelope
    codes = env.codes if env is not None else frozenset()
    detail = _detail(ex)
    phase = ex.transport_error.phase if ex.transport_error is not None else None

    def at(kind: Kind, in_band: bool = False) -> Reading:
        return Reading(kind, ex.status, env, codes, ex.retry_after_s, detail, in_band=in_band, phase=phase)

    status = ex.status
    if status is None:
        return at(_transport_kind(ex, endpoint or ex.request.url))
    if not ex.ok_status:
        if status == 403 and codes & GUARD_CODES:
            return at("not_local")
        if status in (401, 403) or codes & AUTH_CODES:
            return at("auth")
        if status == 429 or codes & RATE_LIMIT_CODES:
            return at("rate_limited")
        if status in (502, 504) and codes & UPSTREAM_DOWN_CODES:
            return at("upstream_down")
        if status == 404 and "path_not_allowed" in codes:
            return at("path_not_allowed")
        if status == 404 and codes & MODEL_MISSING_CODES:
            return at("model_missing")
        if status == 404 and env is None:
            return at("not_found")
        return at("too_large" if status == 413 else "http_error")
    if ex.in_band_error:
        said = _in_band_status(env)
        if codes & AUTH_CODES or said in (401, 403):
            return at("auth", in_band=True)
        return at("rate_limited" if codes & RATE_LIMIT_CODES or said == 429 else "in_band_error", in_band=True)
    if ex.transport_error is not None:
        return at(_transport_kind(ex, endpoint or ex.request.url))
    if ex.protocol_errors:
        return at("protocol_error")
    return at("not_openai" if not ex.streamed and ex.json_body is None else "ok")


def hint(reading: Reading, *, endpoint: str, provider: str | None = None, executable: str = "hermes",
         release: str | None = None) -> str | None:
    """What the operator does about ``reading`` (None when nothing); ``release``: the one under test."""
    kind = reading.kind
    if kind in ("refused", "connect_timeout"):
        return start_hint(provider, executable)
    if kind == "tls_mismatch":
        return (f"{endpoint} is https, but the server on that port answered plain http (the proxy speaks http): "
                f"use http://{endpoint.split('://', 1)[1]}")
    if kind == "not_local" and reading.code == "origin_not_allowed":
        return ("the proxy serves local callers only and refused the request's Origin / Sec-Fetch-Site: drop "
                "the Origin header from extra_headers (nothing else is wrong; the credentials are fine)")
    if kind == "not_local":
        try:
            port = f":{urlsplit(endpoint).port}" if urlsplit(endpoint).port else ""
        except ValueError:
            port = ""
        return (f"the proxy serves local callers only and refused the Host this endpoint sends: use "
                f"http://127.0.0.1{port}/v1 or http://localhost{port}/v1 (nothing else is wrong; the credentials "
                "are fine)")
    if kind == "auth":
        return reauth_hint(provider, reading.envelope.message if reading.envelope else None, executable,
                           status=reading.status, relayed=reading.code not in PROXY_OWN_TYPES, release=release)
    if kind == "rate_limited":
        after = f" (Retry-After: {reading.retry_after_s:g} s)" if reading.retry_after_s is not None else ""
        parked = cooldown_note(provider, 429, executable, release=release)
        return f"re-run later{after}" + (f"; {parked}" if parked else "")
    if kind == "upstream_down":
        return upstream_down_hint(provider, reading.detail)
    return _HINTS.get(kind)


def _outcome(ex: Exchange, r: Reading, status: Status, reason: str, error: str | None, *, action: str | None = None,
             warnings: list[str] | None = None, final: str | None = None) -> Outcome:
    return Outcome(status=status, reason=reason, errors=[ERROR_PREFIX + error] if error else [],
                   warnings=[*ex.warnings, *(warnings or [])], hint=action, http_status=ex.status,
                   error_type=r.code, retry_after_s=ex.retry_after_s, final_message=final)


def classify(exchange: Exchange, config: HermesProxyRuntimeConfig, *, executable: str = "hermes") -> Outcome:
    """The verdict of one chat exchange: the kind's row of the table, and for a whole answer its content."""
    ex = exchange
    r = read(ex, config.endpoint)
    partial = f" ({len(ex.text)} characters of partial text kept)" if ex.text else ""
    if r.kind != "ok":
        status, reason, _ = _KINDS[r.kind]
        upstream = "upstream_timeout" if "upstream_timeout" in r.codes else "upstream_unreachable"
        reason = upstream if r.kind == "upstream_down" else (r.code or reason) if r.kind == "not_local" else reason
        action = hint(r, endpoint=config.endpoint, provider=config.provider, executable=executable)
        said = _in_band_status(r.envelope) if r.in_band else None
        failure = ex.transport_error
        cap = (f"max_duration_ms ({config.max_duration_ms} ms)" if config.max_duration_ms is not None
               else "its overall deadline")
        template = (r.in_band and _ERRORS.get(f"{r.kind} in band")) or _ERRORS.get(r.kind, "HTTP {status}: {detail}")
        error = template.format(
            endpoint=config.endpoint, status=r.status, code=r.code, model=config.model, action=action,
            detail=r.detail if failure or r.kind != "broken" else "no response and no transport error recorded",
            partial=partial, said=f" (status {said})" if said else "", cap=cap, upstream=upstream,
            timeout_ms=config.request_timeout_ms, content_type=ex.content_type or "no content-type",
            silence="of silence mid-stream (stalled)" if r.phase == "body" else "waiting for the response to start",
            where="mid-stream" if r.phase == "body" else "before the response",
            failure=failure.kind if failure else "no response",
            after=f"; retry after {r.retry_after_s:g} s" if r.retry_after_s is not None else "",
            first=ex.protocol_errors[0] if ex.protocol_errors else "",
            more=f" (+{len(ex.protocol_errors) - 1} more)" if len(ex.protocol_errors) > 1 else "")
        return _outcome(ex, r, status, reason, error, action=action)
    if not ex.text.strip():
        tail = "" if (not ex.streamed or ex.done or ex.finish_reason) else " (stream ended without [DONE])"
        return _outcome(ex, r, "failed", "empty", f"empty assistant message{tail}")
    if ex.streamed and not ex.done and not ex.finish_reason:
        return _outcome(ex, r, "failed", "truncated",
                        f"stream ended without [DONE] or a finish_reason (truncated){partial}")
    final = extract_final_message(ex.text)
    warnings: list[str] = []
    if ex.finish_reason == "length":
        warnings.append("finish_reason is length: the answer was cut at max_tokens")
    elif ex.finish_reason and ex.finish_reason not in ("stop", "tool_calls", "function_call"):
        warnings.append(f"finish_reason is {ex.finish_reason}")
    if final is None:
        warnings.append("no uh-runtime-final-message block in the answer (runtime-final.txt will be empty)")
    reason = "length" if ex.finish_reason == "length" else ("no_sentinel" if final is None else "ok")
    return _outcome(ex, r, "passed", reason, None, warnings=warnings, final=final)


#: what one probed route did (docs/wire-contract.md has the vocabulary)
RouteOutcome = Literal[
    "forwarded", "auth_failed", "path_not_allowed", "not_found", "unauthorized", "rejected", "local", "error",
    "bad_response", "unreachable", "timeout", "transport_error", "skipped", "not_local",
]


def body_kind(ex: Exchange) -> str:
    """json-envelope | json | sse | html | text | empty | none"""
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
    return "html" if ex.content_type == "text/html" or text[:1] == "<" else "text"


def route_outcome(ex: Exchange, *, root: bool, expect_sse: bool = False) -> RouteOutcome:
    r = read(ex)
    if r.status is None:
        if r.kind in ("refused", "dns", "connect_error") and r.phase == "connect":
            return "unreachable"
        return "timeout" if r.kind in ("connect_timeout", "read_timeout", "deadline") else "transport_error"
    if r.kind == "not_local":
        return "not_local"
    code = (r.envelope.type or r.envelope.code_str) if r.envelope is not None else None
    if code == "path_not_allowed":
        return "path_not_allowed"
    if code == "upstream_auth_failed":
        return "auth_failed"
    if code in PROXY_ERROR_TYPES:
        return "error"
    shape = body_kind(ex)
    if r.status == 404 and shape != "json-envelope":
        return "not_found"
    if r.status == 413:
        return "rejected"
    if r.status in (401, 403):
        return "unauthorized"
    if 200 <= r.status < 300:
        if root:
            return "local"
        return "forwarded" if shape in (("sse", "json") if expect_sse else ("json",)) else "bad_response"
    return "error" if root else "forwarded"


def answered_by(ex: Exchange, *, root: bool) -> Literal["proxy", "upstream"] | None:
    """Who answered: ``proxy`` (host-root paths, the proxy's own error types) or ``upstream`` (a 2xx under /v1; any
    other status when it came chunked: the proxy streams upstream answers back, its own carry a Content-Length)."""
    if ex.status is None:
        return None
    env = ex.envelope
    if root or (env is not None and (env.type or env.code_str) in PROXY_OWN_TYPES):
        return "proxy"
    if 200 <= ex.status < 300:
        return "upstream"
    chunked = "chunked" in {k.lower(): v for k, v in ex.headers.items()}.get("transfer-encoding", "").lower()
    return "upstream" if chunked else "proxy"


def ended(ex: Exchange) -> str | None:
    """``clean`` when the body ended normally; the transport failure kind that cut it; None without an answer."""
    if ex.status is None:
        return None
    return ex.transport_error.kind if ex.transport_error is not None else "clean"
