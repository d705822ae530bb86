"""The probe's report: its records (routes, auth cases, the report) and how it displays itself.

:mod:`hermes_nb.proxy.probe` sends the requests; :mod:`hermes_nb.proxy.readings` (re-exported here)
says what each answer means. No IO. The outcome vocabulary is documented in docs/wire-contract.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr

from hermes_nb.core.model import StrictModel
from hermes_nb.proxy.drift import Drift, DriftList, NotJudged, Owner
from hermes_nb.proxy.readings import (
    OPENAI_FLOOR,
    PROXY_ERROR_TYPES,
    PROXY_OWN_TYPES,
    RATE_LIMIT_HEADER_RE,
    AuthCaseName,
    ProxyState,
    RouteOutcome,
    StreamShape,
    answered_by,
    bearer_required,
    body_kind,
    ended,
    floor_missing,
    report_state,
    report_warnings,
    response_headers,
    route_outcome,
    server_product,
    sse_events,
    stream_failure_shape,
)

__all__ = [
    "RouteOutcome",
    "StreamShape",
    "RouteResult",
    "AuthCase",
    "Drift",
    "DriftList",
    "WireReport",
    "route_outcome",
    "server_product",
    "body_kind",
    "response_headers",
    "stream_failure_shape",
    "bearer_required",
    "report_state",
    "report_warnings",
    "PROXY_ERROR_TYPES",
    "PROXY_OWN_TYPES",
    "RATE_LIMIT_HEADER_RE",
    "OPENAI_FLOOR",
    "Owner",
    "answered_by",
    "ended",
    "floor_missing",
    "sse_events",
]

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


def _esc(value: Any) -> str:
    from hermes_nb.core.reprs import esc

    return esc(value)


class WireReport(StrictModel):
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
    elapsed_s: float = 0.0

    #: stream timelines of the streamed routes (:class:`~hermes_nb.core.timeline.StreamTimeline` dicts), not dumped
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

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("WireReport(...)" if cycle else self._repr_text_())

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

    def _repr_html_(self) -> str:
        from hermes_nb.core.reprs import box, details, kv_html, seconds, table_html
        from hermes_nb.core.timeline import timeline_svg
        from hermes_nb.proxy.drift import drift_table

        provider = (f"{self.provider} ({self.upstream})" if self.provider and self.upstream
                    else self.provider or self.upstream)
        head = kv_html([("endpoint", self.endpoint), ("provider", provider), ("state", self.state),
                        ("reachable", self.reachable),
                        ("bearer required", self.bearer_required), ("stream failure shape", self.stream_failure_shape),
                        ("server", self.server_product), ("contract", self.contract),
                        ("elapsed", seconds(self.elapsed_s))], badges=("state",))
        parts = [head]
        if self.drift:
            parts += [f"<div><b>{_esc(self.headline)}</b></div>", drift_table(self.drift)]
        if self.upstream_differences:
            parts.append(details(f"upstream differences: {len(self.upstream_differences)} (information: the "
                                 "upstream owns these fields, never drift)", drift_table(self.upstream_differences)))
        rows = [{"route": r.name, "method": r.method, "path": r.path, "status": r.status, "outcome": r.outcome,
                 "body": r.body_kind, "error type": r.error_type or r.transport_error,
                 "elapsed": seconds(r.elapsed_s)} for r in self.routes]
        parts += ["<div><b>routes</b></div>",
                  table_html(rows, ("route", "method", "path", "status", "outcome", "body", "error type", "elapsed"),
                             badges=())]
        if self.auth:
            parts += ["<div><b>auth handoff</b> (GET /v1/models)</div>",
                      table_html([a.model_dump() for a in self.auth], ("case", "header", "status", "error_type",
                                                                        "outcome"), badges=())]
        for name, marks in self.timelines.items():
            parts.append(f"<div><b>stream timeline</b> ({name})</div>" + timeline_svg(marks, title=f"{name} stream"))
        if self.warnings:
            parts.append("<ul>" + "".join(f"<li>{_esc(w)}</li>" for w in self.warnings) + "</ul>")
        if self.not_judged:
            parts.append("<div><b>not judged</b> (the upstream's trouble, not the proxy's)</div><ul>"
                         + "".join(f"<li>{_esc(n)}</li>" for n in self.not_judged) + "</ul>")
        return box("wire-format report", self.verdict, *parts, headline=self.headline)

    def summary(self) -> dict[str, Any]:
        """The ``--json`` object: routes, bearer_required, stream_failure_shape, server, drift, …"""
        return self.model_dump(mode="json")
