"""The pure reading of one probed exchange: who answered, what it was, how it ended; and the report-level facts.

:mod:`hermes_nb.proxy.probe` sends the requests; this module says what the answers mean
(``route_outcome``: forwarded, path_not_allowed, not_found, …) and derives the report-level facts
(auth state, bearer requirement, stream-failure shape, warnings). No IO. The records themselves
live in :mod:`hermes_nb.proxy.report` (which re-exports these names). The outcome vocabulary is
documented in docs/wire-contract.md.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal

from hermes_nb.core.records import NO_CONNECTION, TIMED_OUT, Exchange
from hermes_nb.proxy.drift import Owner

if TYPE_CHECKING:
    from hermes_nb.proxy.report import AuthCase, RouteResult, WireReport

__all__ = [
    "RouteOutcome", "StreamShape", "PROXY_ERROR_TYPES", "PROXY_OWN_TYPES", "OPENAI_FLOOR", "RATE_LIMIT_HEADER_RE",
    "server_product", "body_kind", "route_outcome", "answered_by", "ended", "floor_missing", "sse_events",
    "response_headers", "stream_failure_shape", "bearer_required", "report_state", "report_warnings",
]

#: what one probed route did (not :class:`hermes_nb.core.records.Outcome`, a chat exchange's classification)
RouteOutcome = Literal[
    "forwarded", "auth_failed", "path_not_allowed", "not_found", "unauthorized", "rejected", "local", "error",
    "bad_response", "unreachable", "timeout", "transport_error", "skipped",
]
StreamShape = Literal["json", "sse", "text", "none"]
#: what a probe saw of the proxy as a whole (:func:`report_state`)
ProxyState = Literal["stale", "live", "unreachable", "unknown"]
#: the authorization a probe sends to ``/v1/models``: none, a malformed one, the configured bearer
AuthCaseName = Literal["none", "malformed", "bearer"]
#: the failure shape a proxy's own answer to a streaming request has, by its body kind
_FAILURE_SHAPES: dict[str, StreamShape] = {"sse": "sse", "json": "json", "json-envelope": "json", "text": "text",
                                           "html": "text"}
#: the proxy's own error types (anything else under /v1 came from the upstream)
PROXY_ERROR_TYPES = frozenset({"upstream_unreachable", "upstream_timeout", "proxy_error"})
#: every error type the proxy answers itself (an envelope of another type under /v1 was relayed)
PROXY_OWN_TYPES = PROXY_ERROR_TYPES | {"path_not_allowed", "upstream_auth_failed"}
#: the OpenAI floor: top-level keys every OpenAI-compatible 2xx JSON answer of a route carries
OPENAI_FLOOR: dict[str, tuple[str, ...]] = {
    "chat": ("choices", "created", "id", "model", "object"),
    "chat_large": ("choices", "created", "id", "model", "object"),
    "completions": ("choices", "created", "id", "model", "object"),
    "embeddings": ("data", "object"),
    "models": ("data", "object"),
    "responses": ("id", "object", "output", "status"),
}
RATE_LIMIT_HEADER_RE = re.compile(r"^(x-)?(rate-?limit|ratelimit)|^retry-after(-ms)?$")



def server_product(server: str | None) -> str | None:
    """``Python/3.11 aiohttp/3.14.5`` → ``Python aiohttp`` (versions vary with the install, not the proxy)."""
    if not server:
        return None
    names = [tok.split("/", 1)[0] for tok in server.split() if tok and not tok.startswith("(")]
    return " ".join(names) or None


def body_kind(ex: Exchange) -> str:
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


def route_outcome(ex: Exchange, *, root: bool, expect_sse: bool = False) -> RouteOutcome:
    """What the endpoint did with one request (see docs/wire-contract.md for the vocabulary)."""
    if ex.status is None:
        failure = ex.transport_error
        kind = failure.kind if failure else "other"
        if failure is not None and failure.phase == "connect" and kind in NO_CONNECTION:
            return "unreachable"
        if kind in TIMED_OUT:
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
    shape = body_kind(ex)
    if ex.status == 404 and shape != "json-envelope":
        return "not_found"
    if ex.status == 413:
        return "rejected"
    if ex.status in (401, 403):
        return "unauthorized"
    if 200 <= ex.status < 300:
        if root:
            return "local"
        wanted = ("sse",) if expect_sse else ("json",)
        return "forwarded" if shape in wanted or (expect_sse and shape == "json") else "bad_response"
    return "error" if root else "forwarded"


def answered_by(ex: Exchange, *, root: bool) -> Owner | None:
    """Who answered: ``proxy`` (its own answer) or ``upstream`` (relayed); None without an HTTP answer.

    Host-root paths and the proxy's own error types are the proxy's. A 2xx under ``/v1`` is
    relayed. Any other status is relayed when it came chunked: the proxy streams every upstream
    answer back (``StreamResponse``, no length), while its own answers (``json_response``,
    aiohttp's 404/405/413 texts) carry a ``Content-Length``.
    """
    if ex.status is None:
        return None
    if root:
        return "proxy"
    env = ex.envelope
    if env is not None and (env.type or env.code_str) in PROXY_OWN_TYPES:
        return "proxy"
    if 200 <= ex.status < 300:
        return "upstream"
    chunked = "chunked" in response_headers(ex).get("transfer-encoding", "").lower()
    return "upstream" if chunked else "proxy"


def ended(ex: Exchange) -> str | None:
    """``clean`` when the body ended normally; the transport failure kind that cut it; None without an answer."""
    if ex.status is None:
        return None
    return ex.transport_error.kind if ex.transport_error is not None else "clean"


def floor_missing(name: str, ex: Exchange) -> list[str] | None:
    """The OpenAI floor keys a 2xx JSON answer of ``name`` lacks ([] = all there; None = not applicable)."""
    floor = OPENAI_FLOOR.get(name)
    if floor is None or not ex.ok_status or ex.streamed or not isinstance(ex.json_body, dict):
        return None
    return sorted(set(floor) - set(ex.json_body))


def sse_events(ex: Exchange) -> list[str] | None:
    """Each event name of a stream once, in order: ``event:``, else the data's ``type``/``object``; ``[DONE]``."""
    if not ex.streamed:
        return None
    names: list[str] = []
    for ev in ex.events:
        name = ev.event if ev.event and ev.event != "message" else None
        data = ev.data.strip()
        if name is None and data.startswith("[DONE]"):
            name = "[DONE]"
        elif name is None and data.startswith("{"):
            try:
                obj = json.loads(data)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                found = obj.get("type") or obj.get("object")
                name = found if isinstance(found, str) else None
        if name and name not in names:
            names.append(name)
    return names


def response_headers(ex: Exchange) -> dict[str, str]:
    """The response headers with lower-cased names."""
    return {k.lower(): v for k, v in ex.headers.items()}


def stream_failure_shape(results: list[RouteResult]) -> StreamShape:
    """How the proxy answers a streaming request it fails itself: one JSON body, SSE, text, or none seen.

    Only the proxy's own answers count: an upstream's failure is relayed as the upstream sent it.
    """
    for name in ("chat_stream", "unknown_v1"):
        r = next((x for x in results if x.name == name), None)
        if r is None or r.status is None or 200 <= r.status < 300 or r.answered_by == "upstream":
            continue
        return _FAILURE_SHAPES.get(r.body_kind, "none")
    return "none"


def bearer_required(cases: list[AuthCase]) -> bool | None:
    """True when a missing/malformed header is refused where ``Bearer`` is not; None when untold."""
    by = {c.case: c for c in cases}
    bearer, none = by.get("bearer"), by.get("none")
    if bearer is None or none is None or bearer.status is None or none.status is None:
        return None
    rejected = [
        c for c in (none, by.get("malformed"))
        if c is not None and c.status in (401, 403) and c.answered_by != "upstream"
        and (c.status, c.error_type) != (bearer.status, bearer.error_type)
    ]
    return bool(rejected)


def report_state(results: list[RouteResult]) -> ProxyState:
    """``stale``/``live`` from the chat and models routes; ``unreachable``; else ``unknown``.

    ``live`` means the proxy relayed both to its upstream and the chat answer is a 2xx
    JSON body; ``/v1/models`` may answer anything the upstream likes (an upstream without
    the route answers 404 there: still live).
    """
    if not any(r.status is not None for r in results):
        return "unreachable"
    forwarded = [r for r in results if r.name in ("chat", "models")]
    if forwarded and all(r.outcome == "auth_failed" for r in forwarded):
        return "stale"
    chat = next((r for r in forwarded if r.name == "chat"), None)
    if (chat is not None and chat.outcome == "forwarded" and chat.status is not None and 200 <= chat.status < 300
            and all(r.answered_by == "upstream" for r in forwarded)):
        return "live"
    return "unknown"


def report_warnings(report: WireReport) -> list[str]:
    """One line per problem a human should look at (hanging, unreachable, missing /v1, HTML)."""
    out: list[str] = []
    outcomes = {r.outcome for r in report.routes}
    if not report.reachable and outcomes <= {"timeout", "skipped"}:
        out.append(f"{report.endpoint} accepts connections but never answers: the endpoint hangs")
    elif not report.reachable:
        from hermes_nb.core.providers import start_hint

        first = report.routes[0] if report.routes else None
        why = first.transport_error if first else "no answer"
        out.append(f"endpoint unreachable ({why}) at {report.endpoint}: {start_hint(report.provider)}")
    elif all(r.outcome == "not_found" for r in report.routes if r.name in ("chat", "models", "completions")):
        out.append("every forwarded route answered a plain 404: does the endpoint miss its /v1 base path?")
    if any(r.body_kind == "html" for r in report.routes):
        out.append("the endpoint answers HTML: is this a Hermes proxy?")
    slow = [r.name for r in report.routes if r.transport_error == "upstream_slow"]
    if report.reachable and ("timeout" in outcomes or slow):
        out.append("some requests timed out: the endpoint hangs or is very slow"
                   + (f" (its upstream did not answer in time; not sent after that: {', '.join(slow)})"
                      if slow else ""))
    if "skipped" in outcomes:
        out.append("the probe deadline ran out before every route was probed")
    return out
