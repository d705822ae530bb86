"""The probe's report: its records (routes, auth cases, the report), the report-level facts read from them
(proxy state, bearer requirement, stream-failure shape, warnings), and how it displays itself.

:mod:`hermes_nb.proxy.probe` sends the requests; :mod:`hermes_nb.wire.reading` reads each answer. No IO.
The outcome vocabulary is documented in docs/wire-contract.md.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from hermes_nb.core.model import Shown, StrictModel
from hermes_nb.core.providers import start_hint
from hermes_nb.core.records import Exchange
from hermes_nb.proxy.drift import Drift, DriftList, NotJudged, Owner
from hermes_nb.wire.reading import RouteOutcome

__all__ = ["RouteResult", "AuthCase", "WireReport", "StreamShape", "ProxyState", "AuthCaseName", "OPENAI_FLOOR",
           "RATE_LIMIT_HEADER_RE", "server_product", "floor_missing", "sse_events", "response_headers",
           "stream_failure_shape", "bearer_required", "report_state", "report_warnings"]

StreamShape = Literal["json", "sse", "text", "none"]
#: what a probe saw of the proxy as a whole (:func:`report_state`)
ProxyState = Literal["stale", "live", "unreachable", "not_local", "unknown"]
#: the authorization a probe sends to ``/v1/models``: none, a malformed one, the configured bearer
AuthCaseName = Literal["none", "malformed", "bearer"]
#: the failure shape a proxy's own answer to a streaming request has, by its body kind
_FAILURE_SHAPES: dict[str, StreamShape] = {"sse": "sse", "json": "json", "json-envelope": "json", "text": "text",
                                           "html": "text"}
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
    if all(r.outcome == "not_local" for r in results if r.status is not None):
        return "not_local"
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


class RouteResult(StrictModel):
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
    outcome: RouteOutcome = "skipped"
    #: who answered: the proxy itself, or the upstream it relayed (None: no HTTP answer)
    answered_by: Owner | None = None
    #: how the body ended: ``clean``, or the transport failure that cut it (None: no HTTP answer)
    ended: str | None = None
    #: OpenAI floor keys missing from a 2xx JSON answer (None: not a 2xx JSON answer of a floor route)
    floor_missing: list[str] | None = None
    server: str | None = None
    #: transport failure kind when there was no HTTP answer
    transport_error: str | None = None
    #: ``data: [DONE]`` seen (streams)
    done: bool | None = None
    #: the stream's shape: each event name once, in order (``event:``, else the data's ``type``/``object``;
    #: ``[DONE]``), e.g. ``[response.created, …, response.completed]`` (None: not a stream)
    sse_events: list[str] | None = None
    #: Retry-After of the answer, seconds (a 429 says when to come back)
    retry_after_s: float | None = None
    elapsed_s: float = 0.0


class AuthCase(StrictModel):
    case: AuthCaseName
    #: what was sent, redacted (``(none)``, ``Basic <redacted>``, ``Bearer probe``)
    header: str
    status: int | None = None
    error_type: str | None = None
    outcome: RouteOutcome = "skipped"
    answered_by: Owner | None = None
    #: why it was not sent (``upstream_slow``: an earlier forwarded request got no answer in time)
    transport_error: str | None = None
    retry_after_s: float | None = None


class WireReport(Shown, StrictModel):
    endpoint: str
    #: stale (forwarded routes answer upstream_auth_failed), live (they answer 2xx), unreachable, unknown
    state: ProxyState = "unknown"
    reachable: bool = False
    routes: list[RouteResult] = Field(default_factory=list)
    auth: list[AuthCase] = Field(default_factory=list)
    #: None when it could not be told (endpoint unreachable)
    bearer_required: bool | None = None
    stream_failure_shape: StreamShape = "none"
    server: str | None = None
    #: product names without versions (``Python aiohttp``): what contracts compare
    server_product: str | None = None
    #: CORS / rate-limit header names on the proxy's own answers
    cors_headers: list[str] = Field(default_factory=list)
    rate_limit_headers: list[str] = Field(default_factory=list)
    #: the same on relayed answers (the upstream's headers pass through the proxy)
    relayed_cors_headers: list[str] = Field(default_factory=list)
    relayed_rate_limit_headers: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    #: differences from a contract on proxy-owned fields (these fail the probe)
    drift: list[Drift] = Field(default_factory=list)
    #: differences on upstream-owned fields: information, never a failure
    upstream_differences: list[Drift] = Field(default_factory=list)
    #: what could not be judged, and why (the upstream was slow, down or rate-limited; the proxy unreachable)
    not_judged: list[NotJudged] = Field(default_factory=list)
    #: the provider the proxy fronts (``nous``, ``xai``): ``/health``'s ``upstream``, else the allowed paths
    provider: str | None = None
    #: where :attr:`provider` came from (``/health``, ``path_not_allowed``, ``config``)
    provider_source: str | None = None
    #: ``/health``'s ``upstream`` verbatim (the provider's display name)
    upstream: str | None = None
    #: the paths the proxy says it forwards (from a ``path_not_allowed`` envelope)
    allowed_paths: list[str] | None = None
    #: the contract drift and upstream differences were judged against (its ``target``; None: not compared)
    contract: str | None = None
    #: the one thing the operator does (start the proxy, fix the endpoint, re-run later); None when nothing
    action: str | None = None
    #: the recorded contracts this proxy answers exactly like (a release it behaves as)
    matches: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0

    #: stream timelines of the streamed routes (:class:`~hermes_nb.views.timeline.StreamTimeline` dicts), not dumped
    _timelines: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

    def route(self, name: str) -> RouteResult | None:
        return next((r for r in self.routes if r.name == name), None)

    @property
    def timelines(self) -> dict[str, dict[str, Any]]:
        """Route name → the timing marks of its stream (the probe fills it; not part of ``--json``)."""
        return self._timelines

    def _repr_text_(self) -> str:
        routes = ", ".join(f"{r.name} {r.status if r.status is not None else r.outcome}" for r in self.routes)
        drift = f", {len(self.drift)} drift" if self.drift else ""
        drift += f", {len(self.not_judged)} not judged" if self.not_judged else ""
        provider = f", provider {self.provider}" if self.provider else ""
        return (f"WireReport({self.endpoint}: {self.state}{provider}, reachable={self.reachable}, "
                f"bearer_required={self.bearer_required}, stream_failure_shape={self.stream_failure_shape}"
                f"{drift}, {self.elapsed_s:.3f} s; routes: {routes})")

    @property
    def verdict(self) -> str:
        """passed (live and, when compared, no drift; or what it could not judge was only a slow upstream),
        failed (drift), blocked (stale, unreachable, an upstream rate-limited or reported down)."""
        reasons = {n.reason for n in self.not_judged}
        if self.reachable and reasons & {"rate_limited", "upstream_down"} and not self.drift:
            return "blocked"
        slow = self.state == "unknown" and reasons and reasons <= {"upstream_slow", "probe_deadline"}
        base = {"live": "passed", "stale": "blocked", "unreachable": "blocked"}.get(self.state,
                                                                                     "passed" if slow else "failed")
        return "failed" if self.drift and base == "passed" else base

    @property
    def headline(self) -> str:
        """One line that agrees with the drift: ``no drift vs <contract>`` / ``drift: N proxy-owned lines vs …``."""
        if self.contract is None:
            return f"{self.state} (not compared with a contract)"
        line = DriftList(self.drift, contract=self.contract).headline if self.verdict != "blocked" else (
            f"{self.state}: {DriftList(self.drift, contract=self.contract).headline}")
        reasons = ", ".join(dict.fromkeys(n.reason for n in self.not_judged))
        return line + (f"; {len(self.not_judged)} not judged ({reasons})" if self.not_judged else "")

    def summary(self) -> dict[str, Any]:
        """The ``--json`` object: routes, bearer_required, stream_failure_shape, server, drift, …"""
        return self.model_dump(mode="json")
