"""Classify one :class:`~hermes_nb.core.records.Exchange` as passed, failed or blocked.

Pure. The table (issue 2; seed §8 wins over UH where they differ), first match wins:

==========================================================  =======  ================
condition                                                   status   reason
==========================================================  =======  ================
connection refused                                          blocked  unreachable
connect timeout                                             blocked  connect_timeout
DNS failure (wrong endpoint; no proxy-start hint)           failed   dns
other connect error                                         failed   unreachable
overall cap (max_duration_ms, a probe's deadline) passed     failed   deadline
request_timeout_ms of waiting or of silence mid-stream      failed   read_timeout
reset / protocol error / read error                         failed   stream_broken
status 401/403, or envelope type/code upstream_auth_failed  blocked  auth
status 429, or envelope type/code rate_limit_*              blocked  rate_limited
the proxy's own 502/504 (upstream_unreachable / _timeout)   failed   upstream_unreachable / upstream_timeout
404 with envelope path_not_allowed                          failed   path_not_allowed
404 with envelope model_not_found (type/code only)          blocked  model_missing
any other status outside 2xx                                failed   http_error
in-band error in a 200 stream (auth/rate limit as above)    failed   in_band_error
invalid JSON frame / 2xx body that is not JSON or SSE       failed   protocol_error
no text                                                     failed   empty
stream without [DONE] and without finish_reason             failed   truncated
finish_reason "length"                                      passed   length (warning)
text without the sentinel block                             passed   no_sentinel (warning)
text with the sentinel block                                passed   ok
==========================================================  =======  ================

Transport failures mid-body keep the partial text (the exchange has it; the
error says how much). Auth and rate limit are decided from the status and the
envelope's structured ``type``/``code`` only, never from message text. The
operator hints come from :mod:`hermes_nb.core.providers` (one table): the proxy's own
remediation when its message carries one, else ``config.provider``'s row, else the provider
the proxy's message names, else UH's literal ``<provider>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_nb.core.facts import ERROR_PREFIX
from hermes_nb.core.providers import reauth_hint, start_hint, upstream_down_hint
from hermes_nb.core.records import ErrorEnvelope, Exchange, Outcome, Status
from hermes_nb.wire.sentinel import extract_final_message

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = ["classify", "AUTH_CODES", "RATE_LIMIT_CODES", "MODEL_MISSING_CODES", "UPSTREAM_DOWN_CODES", "auth_hint"]

AUTH_CODES = frozenset({"upstream_auth_failed", "invalid_api_key", "authentication_error", "unauthorized"})
RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded", "rate_limit_error", "rate_limited", "too_many_requests"})
MODEL_MISSING_CODES = frozenset({"model_not_found", "model_not_available", "model_unavailable", "invalid_model"})
#: the proxy's own answers when its upstream cannot be reached (502) or does not answer in time (504)
UPSTREAM_DOWN_CODES = frozenset({"upstream_unreachable", "upstream_timeout"})
_BODY_EXCERPT = 200


def auth_hint(config: HermesProxyRuntimeConfig, envelope: ErrorEnvelope | None = None) -> str:
    """The re-auth action (:func:`hermes_nb.core.providers.reauth_hint`): the proxy's own words first."""
    return reauth_hint(config.provider, envelope.message if envelope is not None else None)


def _codes(env: ErrorEnvelope | None) -> frozenset[str]:
    return env.codes if env is not None else frozenset()


def _short(text: str, limit: int = 500) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


def _detail(ex: Exchange) -> str:
    env = ex.envelope
    if env is not None and env.message:
        return _short(env.message)
    if env is not None and (env.type or env.code is not None):
        return str(env.type or env.code)
    body = (ex.body_text or "").strip()
    if body:
        return f"body: {_short(body, _BODY_EXCERPT)}"
    return "no body"


def _partial(ex: Exchange) -> str:
    return f" ({len(ex.text)} characters of partial text kept)" if ex.text else ""


def _out(ex: Exchange, status: Status, reason: str, error: str | None, *, hint: str | None = None,
         warnings: Sequence[str] = (), final_message: str | None = None) -> Outcome:
    env = ex.envelope
    return Outcome(
        status=status,
        reason=reason,
        errors=[ERROR_PREFIX + error] if error else [],
        warnings=[*ex.warnings, *warnings],
        hint=hint,
        http_status=ex.status,
        error_type=(str(env.type or env.code) if env and (env.type or env.code is not None) else None),
        retry_after_s=ex.retry_after_s,
        final_message=final_message,
    )


def _transport(ex: Exchange, config: HermesProxyRuntimeConfig) -> Outcome:
    failure = ex.transport_error
    assert failure is not None
    endpoint = config.endpoint
    kind, msg = failure.kind, failure.message
    if kind == "connect_refused":
        return _out(ex, "blocked", "unreachable",
                    f"endpoint unreachable: {endpoint} (connection refused; is `hermes proxy start` running?)",
                    hint=start_hint(config.provider))
    if kind == "connect_timeout":
        return _out(ex, "blocked", "connect_timeout",
                    f"connect to {endpoint} timed out (is `hermes proxy start` running?)",
                    hint=start_hint(config.provider))
    if kind == "dns":
        return _out(ex, "failed", "dns", f"cannot resolve the host of {endpoint}: {msg} (wrong endpoint?)",
                    hint="check runtime_config.endpoint (the proxy listens on http://127.0.0.1:8645/v1 by default)")
    if kind == "connect_error":
        from hermes_nb.wire.failures import plain_http_hint  # (httpx: loaded only for this case)

        plain = plain_http_hint(endpoint, failure)
        return _out(ex, "failed", "unreachable",
                    f"cannot connect to {endpoint}: {msg}" + (f" ({plain})" if plain else ""),
                    hint=plain or "check runtime_config.endpoint")
    if kind == "deadline":
        cap = (f"max_duration_ms ({config.max_duration_ms} ms)" if config.max_duration_ms is not None
               else "its overall deadline")
        return _out(ex, "failed", "deadline", f"request cut after {cap}: {msg}{_partial(ex)}")
    if kind == "read_timeout":
        where = "of silence mid-stream (stalled)" if failure.phase == "body" else "waiting for the response to start"
        return _out(ex, "failed", "read_timeout",
                    f"request timed out after {config.request_timeout_ms} ms {where}: {msg}{_partial(ex)}")
    where = "mid-stream" if failure.phase == "body" else "before the response"
    return _out(ex, "failed", "stream_broken", f"connection broken {where} ({kind}): {msg}{_partial(ex)}")


def _http_error(ex: Exchange, config: HermesProxyRuntimeConfig) -> Outcome:
    status = ex.status
    codes = _codes(ex.envelope)
    detail = _detail(ex)
    if status in (401, 403) or codes & AUTH_CODES:
        hint = auth_hint(config, ex.envelope)
        return _out(ex, "blocked", "auth", f"HTTP {status} upstream auth failed: {detail} ({hint})", hint=hint)
    if status == 429 or codes & RATE_LIMIT_CODES:
        after = f"; retry after {ex.retry_after_s:g} s" if ex.retry_after_s is not None else ""
        return _out(ex, "blocked", "rate_limited", f"HTTP {status} rate limited: {detail}{after}",
                    hint="re-run later" + (f" (Retry-After: {ex.retry_after_s:g} s)" if after else ""))
    if status in (502, 504) and codes & UPSTREAM_DOWN_CODES:
        reason = "upstream_timeout" if "upstream_timeout" in codes else "upstream_unreachable"
        hint = upstream_down_hint(config.provider, detail)
        return _out(ex, "failed", reason, f"HTTP {status} {reason}: the proxy could not reach its upstream: {detail}",
                    hint=hint)
    if status == 404 and "path_not_allowed" in codes:
        return _out(ex, "failed", "path_not_allowed",
                    f"HTTP 404 path_not_allowed: {detail} (configuration error or proxy version mismatch)",
                    hint="check that the endpoint ends with /v1 and the hermes version forwards this route")
    if status == 404 and codes & MODEL_MISSING_CODES:
        return _out(ex, "blocked", "model_missing",
                    f'model "{config.model}" not available on this proxy: {detail}',
                    hint="pick a model the provider offers (GET /v1/models)")
    extra = " (is the endpoint's path right? it must include /v1)" if status == 404 and ex.envelope is None else ""
    return _out(ex, "failed", "http_error", f"HTTP {status}: {detail}{extra}")


def _in_band_status(env: ErrorEnvelope | None) -> int | None:
    if env is None or env.status is None:
        return None
    try:
        return int(str(env.status).strip())
    except ValueError:
        return None


def _in_band(ex: Exchange, config: HermesProxyRuntimeConfig) -> Outcome:
    codes = _codes(ex.envelope)
    detail = _detail(ex)
    status = _in_band_status(ex.envelope)
    said = f" (status {status})" if status is not None else ""
    if codes & AUTH_CODES or status in (401, 403):
        hint = auth_hint(config, ex.envelope)
        return _out(ex, "blocked", "auth",
                    f"upstream auth failed inside the stream{said}: {detail} ({hint}){_partial(ex)}", hint=hint)
    if codes & RATE_LIMIT_CODES or status == 429:
        return _out(ex, "blocked", "rate_limited", f"rate limited inside the stream{said}: {detail}{_partial(ex)}",
                    hint="re-run later")
    return _out(ex, "failed", "in_band_error", f"error inside the 200 stream{said}: {detail}{_partial(ex)}")


def classify(exchange: Exchange, config: HermesProxyRuntimeConfig) -> Outcome:
    """The outcome of one chat exchange (see the module table)."""
    ex = exchange
    failure = ex.transport_error
    if ex.status is None:
        if failure is None:
            return _out(ex, "failed", "stream_broken", "no response and no transport error recorded")
        return _transport(ex, config)
    if not ex.ok_status:
        return _http_error(ex, config)
    if ex.in_band_error:
        return _in_band(ex, config)
    if failure is not None:
        return _transport(ex, config)
    if ex.protocol_errors:
        return _out(ex, "failed", "protocol_error",
                    f"malformed stream: {ex.protocol_errors[0]}"
                    + (f" (+{len(ex.protocol_errors) - 1} more)" if len(ex.protocol_errors) > 1 else "")
                    + _partial(ex))
    if not ex.streamed and ex.json_body is None:
        kind = ex.content_type or "no content-type"
        return _out(ex, "failed", "protocol_error",
                    f"HTTP {ex.status} with a body that is neither JSON nor an event stream ({kind}): {_detail(ex)}")
    if not ex.text.strip():
        tail = "" if (not ex.streamed or ex.done or ex.finish_reason) else " (stream ended without [DONE])"
        return _out(ex, "failed", "empty", f"empty assistant message{tail}")
    if ex.streamed and not ex.done and not ex.finish_reason:
        return _out(ex, "failed", "truncated",
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
    return _out(ex, "passed", reason, None, warnings=warnings, final_message=final)
