"""Classification of one exchange: every row of the classification table, table-driven."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hermes_nb import Exchange, HermesProxyRuntimeConfig
from hermes_nb.core.records import ErrorEnvelope, RequestRecord, Timings, TransportFailure
from hermes_nb.wire.reading import classify
from tests.helpers import wrap_final_message

CONFIG = HermesProxyRuntimeConfig(model="hermes-4-405b", request_timeout_ms=1500)
GOOD = "Did the thing.\n" + wrap_final_message("All done.")


def ex(**kw: Any) -> Exchange:
    base: dict[str, Any] = {
        "request": RequestRecord(method="POST", url="http://127.0.0.1:8645/v1/chat/completions"),
        "timings": Timings(started_at=datetime(2026, 1, 1, tzinfo=UTC)),
    }
    return Exchange(**{**base, **kw})


def env(type_: str | None = None, code: Any = None, message: str | None = "msg") -> ErrorEnvelope:
    return ErrorEnvelope(type=type_, code=code, message=message)


def sse(text: str = GOOD, *, done: bool = True, finish: str | None = "stop", **kw: Any) -> Exchange:
    return ex(status=200, content_type="text/event-stream", streamed=True, text=text, done=done,
              finish_reason=finish, **kw)


def fail(kind: str, phase: str = "connect", message: str = "boom") -> TransportFailure:
    return TransportFailure(kind=kind, phase=phase, message=message)  # type: ignore[arg-type]


# (id, exchange, status, reason, substrings the error must contain, substrings it must NOT contain)
ROWS: list[tuple[str, Exchange, str, str, list[str], list[str]]] = [
    ("401-upstream-auth", ex(status=401, envelope=env("upstream_auth_failed", "upstream_auth_failed")),
     "blocked", "auth", ["HTTP 401", "hermes proxy status"], []),
    ("403-no-body", ex(status=403), "blocked", "auth", ["HTTP 403", "hermes proxy status"], []),
    ("500-auth-code", ex(status=500, envelope=env(None, "upstream_auth_failed")), "blocked", "auth", [], []),
    ("500-auth-words-only", ex(status=500, envelope=env("server_error", None, "authentication failed: token")),
     "failed", "http_error", ["HTTP 500", "authentication failed"], ["hermes auth"]),
    ("429-retry-after", ex(status=429, envelope=env(None, 429, "slow down"), retry_after_s=7.0),
     "blocked", "rate_limited", ["HTTP 429", "slow down", "retry after 7 s"], []),
    ("429-no-retry-after", ex(status=429), "blocked", "rate_limited", ["HTTP 429"], ["retry after"]),
    ("404-path-not-allowed", ex(status=404, envelope=env("path_not_allowed", "path_not_allowed")),
     "failed", "path_not_allowed", ["path_not_allowed", "proxy version"], []),
    ("404-model-not-found", ex(status=404, envelope=env("invalid_request_error", "model_not_found", "nope")),
     "blocked", "model_missing", ['model "hermes-4-405b" not available', "nope"], []),
    ("404-model-in-message-only", ex(status=404, envelope=env("not_found", "not_found", "model x missing")),
     "failed", "http_error", ["HTTP 404"], []),
    ("404-text-plain", ex(status=404, content_type="text/plain", body_text="404: Not Found"),
     "failed", "http_error", ["HTTP 404", "body: 404: Not Found", "/v1"], []),
    ("400", ex(status=400, envelope=env("invalid_request_error", None, "bad temperature")),
     "failed", "http_error", ["HTTP 400", "bad temperature"], []),
    ("500-envelope", ex(status=500, envelope=env("proxy_error", "proxy_error", "kaboom")),
     "failed", "http_error", ["HTTP 500", "kaboom"], []),
    ("502-html", ex(status=502, content_type="text/html", body_text="<html>" + "x" * 500 + "</html>"),
     "failed", "http_error", ["HTTP 502", "body: <html>xxx", "…"], []),
    ("504-upstream-timeout", ex(status=504, envelope=env("upstream_timeout", "upstream_timeout", "slow")),
     "failed", "upstream_timeout", ["HTTP 504", "could not reach its upstream"], ["hermes auth"]),
    ("502-upstream-unreachable", ex(status=502, envelope=env(
        "upstream_unreachable", "upstream_unreachable",
        "upstream connection failed: Cannot connect to host api.x.ai:443 ssl:default [Connect call failed]")),
     "failed", "upstream_unreachable", ["HTTP 502", "api.x.ai:443"], ["hermes auth", "hermes proxy start"]),
    ("connect-refused", ex(transport_error=fail("connect_refused")),
     "blocked", "unreachable", ["endpoint unreachable", "hermes proxy start"], []),
    ("connect-timeout", ex(transport_error=fail("connect_timeout")),
     "blocked", "connect_timeout", ["timed out", "hermes proxy start"], []),
    ("dns", ex(transport_error=fail("dns", message="Name or service not known")),
     "failed", "dns", ["cannot resolve", "wrong endpoint"], ["proxy start"]),
    ("connect-error", ex(transport_error=fail("connect_error", message="network unreachable")),
     "failed", "unreachable", ["network unreachable"], []),
    ("read-timeout-headers", ex(transport_error=fail("read_timeout", "headers")),
     "failed", "read_timeout", ["timed out after 1500 ms waiting for the response to start"], []),
    ("stall-mid-stream", sse("partial", done=False, finish=None, transport_error=fail("read_timeout", "body")),
     "failed", "read_timeout", ["1500 ms of silence", "stalled", "7 characters of partial text"], []),
    ("deadline", sse("part", done=False, finish=None, transport_error=fail("deadline", "body")),
     "failed", "deadline", ["cut after its overall deadline", "partial text"], []),
    ("reset-mid-stream", sse("partial", done=False, finish=None, transport_error=fail("reset", "body")),
     "failed", "stream_broken", ["mid-stream", "reset", "partial text"], []),
    ("remote-protocol-mid-stream",
     sse("partial", done=False, finish=None, transport_error=fail("remote_protocol", "body")),
     "failed", "stream_broken", ["remote_protocol"], []),
    ("closed-before-headers", ex(transport_error=fail("remote_protocol", "headers")),
     "failed", "stream_broken", ["before the response"], []),
    ("in-band-error", sse("part", done=False, finish=None, in_band_error=True, envelope=env(None, 502, "upstream")),
     "failed", "in_band_error", ["inside the 200 stream", "upstream", "partial text"], []),
    ("in-band-auth", sse("", done=False, finish=None, in_band_error=True, envelope=env("upstream_auth_failed")),
     "blocked", "auth", ["hermes proxy status"], []),
    ("in-band-rate-limit", sse("", done=False, finish=None, in_band_error=True,
                               envelope=env("rate_limit_exceeded")), "blocked", "rate_limited", [], []),
    ("malformed-frame", sse(GOOD, protocol_errors=["invalid JSON in SSE data: '{x'"]),
     "failed", "protocol_error", ["malformed stream", "invalid JSON"], []),
    ("200-html", ex(status=200, content_type="text/html", body_text="<html>hi</html>"),
     "failed", "protocol_error", ["neither JSON nor an event stream", "text/html"], []),
    ("200-empty-stream", sse("", done=True, finish="stop"), "failed", "empty", ["empty assistant message"],
     ["[DONE]"]),
    ("200-empty-json", ex(status=200, content_type="application/json", json_body={"choices": []}),
     "failed", "empty", ["empty assistant message"], []),
    ("200-no-events", sse("", done=False, finish=None), "failed", "empty", ["without [DONE]"], []),
    ("truncated", sse("partial answer", done=False, finish=None),
     "failed", "truncated", ["without [DONE] or a finish_reason", "partial text"], []),
]

PASSED: list[tuple[str, Exchange, str, list[str], str | None]] = [
    ("sentinel", sse(GOOD), "ok", [], "All done."),
    ("done-without-finish", sse(GOOD, finish=None), "ok", [], "All done."),
    ("finish-without-done", sse(GOOD, done=False), "ok", [], "All done."),
    ("non-stream-json", ex(status=200, content_type="application/json", json_body={}, text=GOOD,
                           finish_reason="stop"), "ok", [], "All done."),
    ("length", sse(GOOD, finish="length"), "length", ["length"], "All done."),
    ("no-sentinel", sse("just text"), "no_sentinel", ["no uh-runtime-final-message block"], None),
    ("length-no-sentinel", sse("cut", finish="length"), "length", ["length", "no uh-runtime-final-message"], None),
    ("content-filter", sse(GOOD, finish="content_filter"), "ok", ["content_filter"], "All done."),
]


@pytest.mark.parametrize(("exchange", "status", "reason", "must", "must_not"),
                         [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_not_passed(exchange: Exchange, status: str, reason: str, must: list[str], must_not: list[str]) -> None:
    outcome = classify(exchange, CONFIG)
    assert (outcome.status, outcome.reason) == (status, reason)
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith("hermes-proxy: ")
    text = outcome.errors[0] + " " + (outcome.hint or "")
    for piece in must:
        assert piece in text
    for piece in must_not:
        assert piece not in text
    assert outcome.final_message is None
    assert outcome.http_status == exchange.status


@pytest.mark.parametrize(("exchange", "reason", "warnings", "final"), [r[1:] for r in PASSED],
                         ids=[r[0] for r in PASSED])
def test_passed(exchange: Exchange, reason: str, warnings: list[str], final: str | None) -> None:
    outcome = classify(exchange, CONFIG)
    assert (outcome.status, outcome.reason, outcome.errors) == ("passed", reason, [])
    assert outcome.final_message == final
    assert len(outcome.warnings) == len(warnings)
    for want, got in zip(warnings, outcome.warnings, strict=True):
        assert want in got


def test_rate_limit_surfaces_retry_after_on_the_outcome() -> None:
    outcome = classify(ex(status=429, retry_after_s=2.5), CONFIG)
    assert outcome.retry_after_s == 2.5 and "2.5 s" in (outcome.hint or "")


def test_auth_hint_without_provider_guesses_none_and_prints_no_placeholder() -> None:
    """With no provider known: `hermes proxy status` and every provider's login, never a guess, never `<provider>`."""
    outcome = classify(ex(status=401), HermesProxyRuntimeConfig(model="m"))
    assert outcome.hint is not None and "hermes proxy status" in outcome.hint and "<" not in outcome.hint
    assert "hermes auth add nous" in outcome.hint and "hermes auth add xai-oauth --type oauth" in outcome.hint


@pytest.mark.parametrize(("provider", "message", "must", "must_not"), [
    # the proxy's own remediation wins, whatever is configured
    ("nous", "No available xAI OAuth credentials found. Run `hermes auth reset xai-oauth` or re-authenticate "
             "with `hermes auth add xai-oauth --type oauth`.",
     ["the proxy says: Run `hermes auth reset xai-oauth`", "`hermes auth add xai-oauth --type oauth`"], ["nous"]),
    # the configured provider's row
    ("xai", "boom", ["hermes auth status xai-oauth", "hermes auth add xai-oauth --type oauth",
                     "hermes auth reset xai-oauth"], ["nous"]),
    # nothing configured: the provider the proxy's message names
    (None, "Failed to refresh Nous Portal credentials: Invalid refresh token",
     ["hermes auth status nous", "hermes auth add nous"], ["xai"]),
])
def test_auth_hint_is_the_providers(provider: str | None, message: str, must: list[str],
                                    must_not: list[str]) -> None:
    config = HermesProxyRuntimeConfig(model="m", provider=provider)  # type: ignore[arg-type]
    outcome = classify(ex(status=401, envelope=env("upstream_auth_failed", "upstream_auth_failed", message)),
                       config)
    assert outcome.status == "blocked" and outcome.hint is not None
    for needle in must:
        assert needle in outcome.hint
    for needle in must_not:
        assert needle not in outcome.hint


def test_error_type_is_reported() -> None:
    outcome = classify(ex(status=404, envelope=env("path_not_allowed", "path_not_allowed")), CONFIG)
    assert outcome.error_type == "path_not_allowed"


def test_proxy_start_hint_only_for_refused_and_connect_timeout() -> None:
    for kind in ("dns", "connect_error", "read_timeout", "reset", "deadline", "other"):
        outcome = classify(ex(transport_error=fail(kind)), CONFIG)
        assert "proxy start" not in " ".join(outcome.errors) + (outcome.hint or ""), kind
        assert outcome.status == "failed", kind


def test_no_response_and_no_failure_is_not_passed() -> None:
    assert classify(ex(), CONFIG).status == "failed"


def test_long_messages_are_shortened_in_errors() -> None:
    outcome = classify(ex(status=500, envelope=env("server_error", None, "y" * 5000)), CONFIG)
    assert len(outcome.errors[0]) < 700 and outcome.errors[0].endswith("…")


#: the hint each not-passed row must carry (None: no hint; the error says it all)
HINTS: dict[str, str | None] = {
    "401-upstream-auth": "hermes proxy status", "403-no-body": "hermes proxy status",
    "500-auth-code": "hermes proxy status", "in-band-auth": "hermes proxy status",
    "429-retry-after": "re-run later (Retry-After: 7 s)", "429-no-retry-after": "re-run later",
    "in-band-rate-limit": "re-run later",
    "404-path-not-allowed": "/v1", "404-model-not-found": "GET /v1/models",
    "connect-refused": "hermes proxy start", "connect-timeout": "hermes proxy start",
    "dns": "runtime_config.endpoint", "connect-error": "runtime_config.endpoint",
    "504-upstream-timeout": "its upstream", "502-upstream-unreachable": "its upstream (host api.x.ai:443)",
    "404-text-plain": "lacks /v1", "200-html": "something else listening",
}


@pytest.mark.parametrize(("row_id", "exchange"), [(r[0], r[1]) for r in ROWS], ids=[r[0] for r in ROWS])
def test_every_row_has_its_hint(row_id: str, exchange: Exchange) -> None:
    outcome = classify(exchange, CONFIG)
    want = HINTS.get(row_id)
    if want is None:
        assert outcome.hint is None, outcome.hint
    else:
        assert outcome.hint is not None and want in outcome.hint
    if row_id == "429-no-retry-after":
        assert outcome.hint == "re-run later"


@pytest.mark.parametrize("kind", ["read_timeout", "reset", "remote_protocol", "read_error", "deadline"])
def test_mid_stream_failures_say_how_much_partial_text_was_kept(kind: str) -> None:
    exchange = sse("twelve chars", done=False, finish=None, transport_error=fail(kind, "body"))
    outcome = classify(exchange, CONFIG)
    assert outcome.status == "failed" and "(12 characters of partial text kept)" in outcome.errors[0]
