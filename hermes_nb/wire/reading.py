"""ONE reading of a response: what happened, said once; the verdicts are tables over it.

:func:`read` turns an :class:`~hermes_nb.core.records.Exchange` into a :class:`Reading`: who answered, the
failure kind (one vocabulary for every job), the status, the envelope and its codes, the Retry-After. Then:

* :func:`classify`: a chat exchange's verdict (passed/failed/blocked and a reason; the run, the e2e notebook,
  the console, the magics);
* :data:`CHECK_STATES`: the adapter check's state for a kind (:mod:`hermes_nb.proxy.check`);
* :func:`route_outcome`: what a probed route did (:mod:`hermes_nb.proxy.probe`);
* :func:`hint`: the one operator action for a reading (the proxy's own words first, then the provider's row of
  :mod:`hermes_nb.core.providers`).

Auth and rate limit are decided from the status and the envelope's structured ``type``/``code`` only, never
from message text. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import ERROR_PREFIX
from hermes_nb.core.providers import cooldown_note, reauth_hint, start_hint, upstream_down_hint
from hermes_nb.core.records import ErrorEnvelope, Exchange, Outcome, Status
from hermes_nb.wire.sentinel import extract_final_message

__all__ = ["Kind", "Reading", "read", "classify", "hint", "CHECK_STATES", "route_outcome", "answered_by",
           "body_kind", "ended", "AUTH_CODES", "RATE_LIMIT_CODES", "UPSTREAM_DOWN_CODES", "GUARD_CODES",
           "PROXY_OWN_TYPES", "RouteOutcome"]

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

#: What happened, in one vocabulary. No HTTP answer: refused, connect_timeout, dns, tls_mismatch (https to a
#: plain-http port), connect_error, deadline (an overall budget), read_timeout (a silence), broken (reset, cut).
#: An HTTP answer: not_local (the local-only guard), auth, rate_limited, upstream_down, path_not_allowed,
#: model_missing, not_found (a 404 without an envelope), too_large (413), http_error (any other error
#: status), in_band_error (an error inside a 200 stream), protocol_error (malformed frames), not_openai (a 2xx
#: body that is neither JSON nor a stream), ok.
Kind = Literal["refused", "connect_timeout", "dns", "tls_mismatch", "connect_error", "deadline", "read_timeout",
               "broken", "not_local", "auth", "rate_limited", "upstream_down", "path_not_allowed", "model_missing",
               "not_found", "too_large", "http_error", "in_band_error", "protocol_error", "not_openai", "ok"]
#: what OpenSSL says when the server on an https endpoint's port answers plain http (1.1/3.0, then 3.2+)
_PLAIN_HTTP_MARKERS = ("wrong version number", "record layer failure", "packet length too long", "http request")
_EXCERPT = 200


@dataclass(frozen=True)
class Reading:
    """What one exchange says, read once."""

    kind: Kind
    status: int | None
    envelope: ErrorEnvelope | None
    #: ``type`` and ``code`` of the envelope, lower-cased
    codes: frozenset[str]
    retry_after_s: float | None
    #: the envelope's message, else a body excerpt, else the transport failure's message
    detail: str
    #: the error arrived inside a 200 stream
    in_band: bool = False
    #: the transport failure's phase (``connect``, ``headers``, ``body``), None with a whole answer
    phase: str | None = None

    @property
    def code(self) -> str | None:
        """The envelope's own error name (``host_not_allowed``, ``upstream_timeout``…)."""
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
    return f"body: {_short(body, _EXCERPT)}" if body else "no body"


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
    """The reading of one exchange (``endpoint``: the one it was sent to; default the request's URL)."""
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
        in_band = _in_band_status(env)
        if codes & AUTH_CODES or in_band in (401, 403):
            return at("auth", in_band=True)
        if codes & RATE_LIMIT_CODES or in_band == 429:
            return at("rate_limited", in_band=True)
        return at("in_band_error", in_band=True)
    if ex.transport_error is not None:
        return at(_transport_kind(ex, endpoint or ex.request.url))
    if ex.protocol_errors:
        return at("protocol_error")
    if not ex.streamed and ex.json_body is None:
        return at("not_openai")
    return at("ok")


# --------------------------------------------------------------------------- the one operator action


def _host_port(endpoint: str) -> str:
    try:
        url = urlsplit(endpoint)
        return f":{url.port}" if url.port else ""
    except ValueError:
        return ""


def hint(reading: Reading, *, endpoint: str, provider: str | None = None, executable: str = "hermes",
         release: str | None = None) -> str | None:
    """What the operator does about ``reading`` (None when nothing: a passed answer, an unexplained error);
    ``release``: the one under test (the provider facts that follow it)."""
    kind = reading.kind
    if kind in ("refused", "connect_timeout"):
        return start_hint(provider, executable)
    if kind == "dns":
        return "check runtime_config.endpoint (the proxy listens on http://127.0.0.1:8645/v1 by default)"
    if kind == "tls_mismatch":
        return (f"{endpoint} is https, but the server on that port answered plain http (the proxy speaks http): "
                f"use http://{endpoint.split('://', 1)[1]}")
    if kind == "connect_error":
        return "check runtime_config.endpoint"
    if kind == "not_local":
        if reading.code == "origin_not_allowed":
            return ("the proxy serves local callers only and refused the request's Origin / Sec-Fetch-Site: drop "
                    "the Origin header from extra_headers (nothing else is wrong; the credentials are fine)")
        port = _host_port(endpoint)
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
    if kind == "path_not_allowed":
        return "check that the endpoint ends with /v1 and that this hermes release forwards the route"
    if kind == "model_missing":
        return "pick a model the provider offers (GET /v1/models)"
    if kind == "not_found":
        return "the endpoint's path probably lacks /v1 (e.g. http://127.0.0.1:8645/v1)"
    if kind == "not_openai":
        return "is something else listening on this port? the proxy answers JSON or an event stream"
    return None


# --------------------------------------------------------------------------- the chat verdict


def _partial(ex: Exchange) -> str:
    return f" ({len(ex.text)} characters of partial text kept)" if ex.text else ""


#: a chat exchange's (status, reason) for each kind (``ok`` is judged on its content below)
_CHAT: dict[str, tuple[Status, str]] = {
    "refused": ("blocked", "unreachable"), "connect_timeout": ("blocked", "connect_timeout"),
    "dns": ("failed", "dns"), "tls_mismatch": ("failed", "unreachable"), "connect_error": ("failed", "unreachable"),
    "deadline": ("failed", "deadline"), "read_timeout": ("failed", "read_timeout"),
    "broken": ("failed", "stream_broken"), "not_local": ("blocked", "not_local"), "auth": ("blocked", "auth"),
    "rate_limited": ("blocked", "rate_limited"), "upstream_down": ("failed", "upstream_unreachable"),
    "path_not_allowed": ("failed", "path_not_allowed"),
    "model_missing": ("blocked", "model_missing"), "not_found": ("failed", "http_error"),
    "too_large": ("failed", "http_error"), "http_error": ("failed", "http_error"),
    "in_band_error": ("failed", "in_band_error"), "protocol_error": ("failed", "protocol_error"),
    "not_openai": ("failed", "protocol_error"),
}


def _error_text(r: Reading, ex: Exchange, config: HermesProxyRuntimeConfig, action: str | None) -> str:
    """The one-line error of a failed or blocked chat exchange."""
    kind, endpoint, status, detail = r.kind, config.endpoint, r.status, r.detail
    said = f" (status {_in_band_status(r.envelope)})" if r.in_band and _in_band_status(r.envelope) else ""
    if kind == "refused":
        return f"endpoint unreachable: {endpoint} (connection refused; is `hermes proxy start` running?)"
    if kind == "connect_timeout":
        return f"connect to {endpoint} timed out (is `hermes proxy start` running?)"
    if kind == "dns":
        return f"cannot resolve the host of {endpoint}: {detail} (wrong endpoint?)"
    if kind in ("tls_mismatch", "connect_error"):
        return f"cannot connect to {endpoint}: {detail}" + (f" ({action})" if kind == "tls_mismatch" else "")
    if kind == "deadline":
        cap = (f"max_duration_ms ({config.max_duration_ms} ms)" if config.max_duration_ms is not None
               else "its overall deadline")
        return f"request cut after {cap}: {detail}{_partial(ex)}"
    if kind == "read_timeout":
        where = "of silence mid-stream (stalled)" if r.phase == "body" else "waiting for the response to start"
        return f"request timed out after {config.request_timeout_ms} ms {where}: {detail}{_partial(ex)}"
    if kind == "broken":
        failure = ex.transport_error
        where = "mid-stream" if r.phase == "body" else "before the response"
        return (f"connection broken {where} ({failure.kind if failure else 'no response'}): "
                f"{detail if failure else 'no response and no transport error recorded'}{_partial(ex)}")
    if kind == "not_local":
        return f"HTTP 403 {r.code}: the proxy refused this request before any route: {detail}"
    if kind == "auth" and r.in_band:
        return f"upstream auth failed inside the stream{said}: {detail} ({action}){_partial(ex)}"
    if kind == "auth":
        return f"HTTP {status} upstream auth failed: {detail} ({action})"
    if kind == "rate_limited" and r.in_band:
        return f"rate limited inside the stream{said}: {detail}{_partial(ex)}"
    if kind == "rate_limited":
        after = f"; retry after {r.retry_after_s:g} s" if r.retry_after_s is not None else ""
        return f"HTTP {status} rate limited: {detail}{after}"
    if kind == "upstream_down":
        return f"HTTP {status} {_upstream_reason(r)}: the proxy could not reach its upstream: {detail}"
    if kind == "path_not_allowed":
        return f"HTTP 404 path_not_allowed: {detail} (configuration error or proxy version mismatch)"
    if kind == "model_missing":
        return f'model "{config.model}" not available on this proxy: {detail}'
    if kind == "in_band_error":
        return f"error inside the 200 stream{said}: {detail}{_partial(ex)}"
    if kind == "protocol_error":
        extra = f" (+{len(ex.protocol_errors) - 1} more)" if len(ex.protocol_errors) > 1 else ""
        return f"malformed stream: {ex.protocol_errors[0]}{extra}{_partial(ex)}"
    if kind == "not_openai":
        return (f"HTTP {status} with a body that is neither JSON nor an event stream "
                f"({ex.content_type or 'no content-type'}): {detail}")
    extra = " (is the endpoint's path right? it must include /v1)" if kind == "not_found" else ""
    return f"HTTP {status}: {detail}{extra}"


def _upstream_reason(r: Reading) -> str:
    return "upstream_timeout" if "upstream_timeout" in r.codes else "upstream_unreachable"


def _outcome(ex: Exchange, r: Reading, status: Status, reason: str, error: str | None, *, action: str | None = None,
             warnings: list[str] | None = None, final: str | None = None) -> Outcome:
    return Outcome(status=status, reason=reason, errors=[ERROR_PREFIX + error] if error else [],
                   warnings=[*ex.warnings, *(warnings or [])], hint=action, http_status=ex.status,
                   error_type=r.code, retry_after_s=ex.retry_after_s, final_message=final)


def classify(exchange: Exchange, config: HermesProxyRuntimeConfig, *, executable: str = "hermes") -> Outcome:
    """The verdict of one chat exchange: the kind's row of the table, and for a whole answer its content
    (empty, truncated, cut at ``max_tokens``, with or without the final-message block)."""
    ex = exchange
    r = read(ex, config.endpoint)
    if r.kind != "ok":
        status, reason = _CHAT[r.kind]
        if r.kind == "upstream_down":
            reason = _upstream_reason(r)
        elif r.kind == "not_local":
            reason = r.code or "not_local"
        action = hint(r, endpoint=config.endpoint, provider=config.provider, executable=executable)
        return _outcome(ex, r, status, reason, _error_text(r, ex, config, action), action=action)
    if not ex.text.strip():
        tail = "" if (not ex.streamed or ex.done or ex.finish_reason) else " (stream ended without [DONE])"
        return _outcome(ex, r, "failed", "empty", f"empty assistant message{tail}")
    if ex.streamed and not ex.done and not ex.finish_reason:
        return _outcome(ex, r, "failed", "truncated",
                        f"stream ended without [DONE] or a finish_reason (truncated){_partial(ex)}")
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


# --------------------------------------------------------------------------- the check's states

#: the adapter check's state for each kind (``ok`` on ``/models``: ready, judged on the model list)
CHECK_STATES: dict[str, str] = {
    "refused": "unreachable", "connect_timeout": "unreachable", "read_timeout": "slow", "deadline": "slow",
    "dns": "misconfigured", "tls_mismatch": "misconfigured", "connect_error": "error", "broken": "error",
    "not_local": "not_local", "auth": "locked", "rate_limited": "rate_limited", "upstream_down": "error",
    "path_not_allowed": "misconfigured", "model_missing": "misconfigured", "not_found": "misconfigured",
    "too_large": "error", "http_error": "error", "in_band_error": "error", "protocol_error": "error",
    "not_openai": "error", "ok": "ready",
}


# --------------------------------------------------------------------------- the probe's route outcomes

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
    """What the endpoint did with one probed request, from its :func:`read`."""
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
        wanted = ("sse", "json") if expect_sse else ("json",)
        return "forwarded" if shape in wanted else "bad_response"
    return "error" if root else "forwarded"


def answered_by(ex: Exchange, *, root: bool) -> Literal["proxy", "upstream"] | None:
    """Who answered: ``proxy`` (its own answer) or ``upstream`` (relayed); None without an HTTP answer.

    Host-root paths and the proxy's own error types are the proxy's. A 2xx under ``/v1`` is relayed. Any
    other status is relayed when it came chunked: the proxy streams every upstream answer back, while its own
    answers carry a ``Content-Length``.
    """
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

