"""The probe's records: what it sends, what it saw, the drift from a contract (docs/wire-contract.md)."""

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from hermes_nb.core.model import Shown, StrictModel
from hermes_nb.wire.reading import RouteOutcome


@dataclass(frozen=True)
class RouteSpec:
    """One probed route. ``path`` is relative to the endpoint, or to its origin when ``root``; ``variant`` tells
    routes with one method and path apart; ``scenario``: what it asks of the upstream (a foreign one ignores it)."""

    name: str
    method: str
    path: str
    root: bool = False
    body: str | None = None
    sse: bool = False
    variant: str = ""
    scenario: str | None = None

    @property
    def display_path(self) -> str:
        return self.path if self.root else "/v1" + self.path

    @property
    def label(self) -> str:  # how drift lines name the route: POST /v1/chat/completions (stream)
        return f"{self.method} {self.display_path}" + (f" ({self.variant})" if self.variant else "")


#: the proxy's own routes first (they answer at once, whatever the upstream does), then the forwarded ones
ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("health", "GET", "/health", root=True),
    RouteSpec("root", "GET", "/", root=True),
    RouteSpec("v1_health", "GET", "/health"),
    # a streaming request the proxy itself refuses: the shape of a proxy-layer stream failure
    RouteSpec("unknown_v1", "POST", "/hermes-nb-probe/unknown", body="chat_stream", sse=True),
    RouteSpec("chat", "POST", "/chat/completions", body="chat"),
    RouteSpec("chat_stream", "POST", "/chat/completions", body="chat_stream", sse=True, variant="stream"),
    # hermes_nb's upstream ends this stream with a finish_reason and no [DONE]: does the proxy add one?
    RouteSpec("chat_stream_no_done", "POST", "/chat/completions", body="chat_stream", sse=True,
              variant="upstream sends no [DONE]", scenario="no-done"),
    # 1.5 MB: over aiohttp's 1 MiB default body cap, under the proxy's 10 MB one (hermes-agent >= 0.18.1)
    RouteSpec("chat_large", "POST", "/chat/completions", body="chat_large", variant="1.5 MB body"),
    RouteSpec("completions", "POST", "/completions", body="completions"),
    RouteSpec("embeddings", "POST", "/embeddings", body="embeddings"),
    RouteSpec("models", "GET", "/models"),
    # OpenAI's Responses API: forwarded by xai, 404 path_not_allowed on nous (a proxy-owned fact either way)
    RouteSpec("responses", "POST", "/responses", body="responses"),
    RouteSpec("responses_stream", "POST", "/responses", body="responses_stream", sse=True, variant="stream"),
)
LABELS = {spec.name: spec.label for spec in ROUTES}
LOCAL_ROUTES = frozenset({"health", "root", "v1_health", "unknown_v1"})
#: an upstream that plays these scenarios is hermes_nb's
STREAM_VARIANTS = tuple(s.scenario for s in ROUTES if s.scenario)
#: the auth handoff on ``GET /v1/models``: the header sent (False: none)
AUTH_CASES: tuple[tuple[str, bool | str], ...] = (
    ("none", False), ("malformed", "Basic cHJvYmU6cHJvYmU="), ("bearer", True))
#: the admission layer on ``GET /health``: what a browser or a foreign name sends (a local-only proxy: 403 each)
ADMISSION_CASES: tuple[tuple[str, str, str], ...] = (
    ("host", "Host", "127.1:{port}"), ("origin", "Origin", "http://evil.example"),
    ("fetch_site", "Sec-Fetch-Site", "cross-site"))

StreamShape = Literal["json", "sse", "text", "none"]
ProxyState = Literal["stale", "live", "unreachable", "not_local", "unknown"]
#: who a contract field describes: the proxy (drift), whatever upstream answers behind it, or nobody can tell
Owner = Literal["proxy", "upstream", "unknown"]
#: why a field was not judged (``upstream_down``: the proxy's own 502/504)
NotJudgedReason = Literal["unreachable", "not_local", "upstream_slow", "upstream_down", "rate_limited",
                          "probe_deadline"]


def fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    return "[" + ", ".join(str(v) for v in value) + "]" if isinstance(value, list) else str(value)


class Drift(Shown, StrictModel):
    """A difference from a contract; only a proxy-owned one is drift, the others are information."""

    field: str
    expected: Any = None
    observed: Any = None
    owner: Owner = "proxy"

    def __str__(self) -> str:
        return f"{self.field}: {fmt(self.expected)} → {fmt(self.observed)}"

    def _repr_text_(self) -> str:
        return f"Drift({self})"


class NotJudged(StrictModel):
    """A contract field (or a whole route) left out of the judgement: the upstream's trouble is not drift."""

    field: str
    reason: NotJudgedReason
    detail: str = ""
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.field}: not judged ({self.reason}{': ' + self.detail if self.detail else ''})"


class DriftList(Shown, list["Drift"]):
    """The drift from a contract (``contract``: its ``target``): a list that displays itself."""

    def __init__(self, items: Any = (), contract: str | None = None) -> None:
        super().__init__(items)
        self.contract = contract

    @property
    def headline(self) -> str:
        """``no drift vs <contract>`` or ``drift: N proxy-owned lines vs <contract>``."""
        against = f" vs {self.contract}" if self.contract else ""
        if not self:
            return f"no drift{against}"
        return f"drift: {len(self)} proxy-owned line{'s' if len(self) != 1 else ''}{against}"

    def _repr_text_(self) -> str:
        if not self:
            return f"{self.headline}: the proxy matches the recorded wire contract"
        return f"{self.headline}:\n" + "\n".join(f"  {d}" for d in self)


class RouteResult(StrictModel):
    name: str
    method: str
    path: str
    status: int | None = None
    content_type: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    #: json-envelope | json | sse | html | text | empty | none; a non-JSON body's first line
    body_kind: str = "none"
    body_excerpt: str | None = None
    json_keys: list[str] | None = None
    outcome: RouteOutcome = "skipped"
    answered_by: Owner | None = None
    #: ``clean``, or the transport failure that cut the body
    ended: str | None = None
    floor_missing: list[str] | None = None
    server: str | None = None
    transport_error: str | None = None
    done: bool | None = None
    sse_events: list[str] | None = None
    retry_after_s: float | None = None
    elapsed_s: float = 0.0


class AuthCase(StrictModel):
    """One request of the auth handoff or the admission layer: what was sent (redacted) and the answer."""

    case: str
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
    state: ProxyState = "unknown"
    reachable: bool = False
    routes: list[RouteResult] = Field(default_factory=list)
    auth: list[AuthCase] = Field(default_factory=list)
    admission: list[AuthCase] = Field(default_factory=list)
    #: hermes_nb's upstream answers (it plays the stream variants): relayed streams are then the proxy's to judge
    upstream_known: bool | None = None
    bearer_required: bool | None = None
    stream_failure_shape: StreamShape = "none"
    server: str | None = None
    #: ``Python aiohttp`` (no versions): what contracts compare
    server_product: str | None = None
    #: CORS / rate-limit header names on the proxy's own answers, and on relayed ones
    cors_headers: list[str] = Field(default_factory=list)
    rate_limit_headers: list[str] = Field(default_factory=list)
    relayed_cors_headers: list[str] = Field(default_factory=list)
    relayed_rate_limit_headers: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    #: differences on proxy-owned fields (they fail the probe), on the others (information), what was not judged
    drift: list[Drift] = Field(default_factory=list)
    upstream_differences: list[Drift] = Field(default_factory=list)
    not_judged: list[NotJudged] = Field(default_factory=list)
    provider: str | None = None
    provider_source: str | None = None
    upstream: str | None = None
    #: the paths the proxy says it forwards (its ``path_not_allowed`` envelope)
    allowed_paths: list[str] | None = None
    #: the release under test and where that came from (``0.22.2.post1 (--hermes-bin …)``)
    release: str | None = None
    #: the contract's ``target`` (None: not compared)
    contract: str | None = None
    #: the one thing the operator does (start the proxy, fix the endpoint, re-run later)
    action: str | None = None
    #: the recorded releases this proxy answers exactly like
    matches: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0
    _timelines: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

    def route(self, name: str) -> RouteResult | None:
        return next((r for r in self.routes if r.name == name), None)

    @property
    def timelines(self) -> dict[str, dict[str, Any]]:
        """Route name → the timing marks of its stream (not part of ``--json``)."""
        return self._timelines

    def _repr_text_(self) -> str:
        routes = ", ".join(f"{r.name} {r.status if r.status is not None else r.outcome}" for r in self.routes)
        more = (f", provider {self.provider}" if self.provider else "") + f", reachable={self.reachable}, " \
            f"bearer_required={self.bearer_required}, stream_failure_shape={self.stream_failure_shape}" + \
            (f", {len(self.drift)} drift" if self.drift else "") + \
            (f", {len(self.not_judged)} not judged" if self.not_judged else "")
        return f"WireReport({self.endpoint}: {self.state}{more}, {self.elapsed_s:.3f} s; routes: {routes})"

    @property
    def verdict(self) -> str:
        """passed (live, no drift; or only a slow upstream not judged), failed (drift), blocked (stale, unreachable,
        refused by the local-only guard, an upstream rate-limited or reported down)."""
        reasons = {n.reason for n in self.not_judged}
        if self.reachable and reasons & {"rate_limited", "upstream_down"} and not self.drift:
            return "blocked"
        slow = self.state == "unknown" and reasons and reasons <= {"upstream_slow", "probe_deadline"}
        base = {"live": "passed", "stale": "blocked", "unreachable": "blocked", "not_local": "blocked"}.get(
            self.state, "passed" if slow else "failed")
        return "failed" if self.drift and base == "passed" else base

    @property
    def headline(self) -> str:
        """One line that agrees with the drift: ``no drift vs <contract>`` / ``drift: N proxy-owned lines vs …``."""
        if self.state == "not_local":
            return f"not_local: the proxy refused every request ({self.action})"
        if self.contract is None:
            return f"{self.state} (not compared with a contract)"
        line = DriftList(self.drift, contract=self.contract).headline
        line = line if self.verdict != "blocked" else f"{self.state}: {line}"
        reasons = ", ".join(dict.fromkeys(n.reason for n in self.not_judged))
        return line + (f"; {len(self.not_judged)} not judged ({reasons})" if self.not_judged else "")

    def summary(self) -> dict[str, Any]:
        """The ``--json`` object."""
        return self.model_dump(mode="json")
