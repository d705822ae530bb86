"""The wire-format spike as code: every route, the auth handoff, the admission layer and the failure shapes of one
endpoint, with cheap bodies; HTTP and network failures never raise (the report's routes say what happened)."""

import json
import re
import time
from typing import Annotated, Any, Literal

import httpx
from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, merge_runtime_config
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, DEFAULT_MODEL
from hermes_nb.core.providers import start_hint
from hermes_nb.core.records import Exchange, StreamTimeline
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt
from hermes_nb.emulator.scenarios import SCENARIO_HEADER
from hermes_nb.proxy.contracts import behaves_as, closest_contract, release_contract
from hermes_nb.proxy.report import (
    ADMISSION_CASES,
    AUTH_CASES,
    LOCAL_ROUTES,
    ROUTES,
    STREAM_VARIANTS,
    AuthCase,
    ProxyState,
    RouteResult,
    RouteSpec,
    StreamShape,
    WireReport,
)
from hermes_nb.target import PROBE_SCENARIO, UNKNOWN, Target, allowed_paths_of, detect_provider
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import answered_by, body_kind, ended, hint, read, route_outcome

_CLI = frozenset({"cli"})
LARGE_BODY_BYTES = 1_500_000
_FAILURE_SHAPES: dict[str, StreamShape] = {"sse": "sse", "json": "json", "json-envelope": "json", "text": "text",
                                           "html": "text"}
_CHAT_FLOOR = ("choices", "created", "id", "model", "object")
#: the OpenAI floor: top-level keys every OpenAI-compatible 2xx JSON answer of a route carries
OPENAI_FLOOR: dict[str, tuple[str, ...]] = {
    "chat": _CHAT_FLOOR, "chat_large": _CHAT_FLOOR, "completions": _CHAT_FLOOR, "embeddings": ("data", "object"),
    "models": ("data", "object"), "responses": ("id", "object", "output", "status")}
RATE_LIMIT_HEADER_RE = re.compile(r"^(x-)?(rate-?limit|ratelimit)|^retry-after(-ms)?$")


class ProbeSpec(ConfigOptions):
    """The probe's options (``hermes-nb probe``, ``%hermes_probe``, the wire_format_spike notebook)."""

    compare: str | None = Field(None, description="the contract to compare with: a recorded release's name (`hermes-nb "
                                                  "contract list`; the detected provider's), seed, or a file (its "
                                                  "provider siblings beside it)")
    state: Annotated[Literal["stale", "live"] | None, Opt(faces=_CLI)] = Field(
        None, description="the contract section to compare with (default: the state the probe detects)")
    out: Annotated[str | None, Opt(faces=_CLI)] = Field(None, description="also write the report (JSON) here")
    write_contract: Annotated[str | None, Opt(faces=_CLI)] = Field(
        None, description="write the observed contract (this probe as its only state section) here")
    hermes_bin: Annotated[str | None, Opt(faces=_CLI)] = Field(
        None, description="the hermes executable of the proxy under test: its release is reported, hints name it")
    budget_s: float = Field(30.0, gt=0, description="the longest the whole probe may take")
    request_budget_s: float = Field(5.0, gt=0, description="the longest one probed request may take")
    scenario: Annotated[str, Opt(faces=frozenset({"magic", "notebook"}))] = Field(
        "ok", description="the embedded emulator's scenario (only when no endpoint is configured)")


def server_product(server: str | None) -> str | None:
    """``Python/3.11 aiohttp/3.14.5`` → ``Python aiohttp`` (the versions are the install's, not the proxy's)."""
    names = [tok.split("/", 1)[0] for tok in (server or "").split() if tok and not tok.startswith("(")]
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
        data = ev.data.strip()
        try:
            body = json.loads(data) if data.startswith("{") else None
        except ValueError:
            body = None
        typed = body.get("type") or body.get("object") if isinstance(body, dict) else None
        name = ev.event if ev.event and ev.event != "message" else "[DONE]" if data.startswith("[DONE]") else typed
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def stream_failure_shape(results: list[RouteResult]) -> StreamShape:
    """How the proxy answers a streaming request it fails itself (only its own answers count)."""
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
    return any(c is not None and c.status in (401, 403) and c.answered_by != "upstream"
               and (c.status, c.error_type) != (bearer.status, bearer.error_type)
               for c in (none, by.get("malformed")))


def report_state(results: list[RouteResult]) -> ProxyState:
    """``stale``/``live`` from the chat and models routes (``live``: both relayed, the chat a 2xx), else
    ``unreachable``, ``not_local`` or ``unknown``."""
    answered = [r for r in results if r.status is not None]
    if not answered:
        return "unreachable"
    if all(r.outcome == "not_local" for r in answered):
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


def _result(spec: RouteSpec, ex: Exchange, redactor: Redactor) -> RouteResult:
    env, kind = ex.envelope, body_kind(ex)
    return RouteResult(
        name=spec.name, method=spec.method, path=httpx.URL(ex.request.url).path or "/",
        status=ex.status, content_type=ex.content_type,
        error_type=env.type if env else None, error_code=env.code_str if env else None,
        error_message=redactor.text(env.message) if env and env.message else None, body_kind=kind,
        body_excerpt=redactor.text((ex.body_text or "").strip().splitlines()[0][:120]) if kind in ("text", "html")
        else None, json_keys=sorted(ex.json_body) if isinstance(ex.json_body, dict) else None,
        outcome=route_outcome(ex, root=spec.root, expect_sse=spec.sse),
        answered_by=answered_by(ex, root=spec.root), ended=ended(ex), floor_missing=floor_missing(spec.name, ex),
        server=ex.server, transport_error=ex.transport_error.kind if ex.transport_error else None,
        done=ex.done if spec.sse and ex.streamed else None, sse_events=sse_events(ex),
        retry_after_s=ex.retry_after_s, elapsed_s=round(ex.timings.total_s, 3))


def _case(case: str, header: str, ex: Exchange | None, *, root: bool, unsent: str = "deadline") -> AuthCase:
    if ex is None:
        return AuthCase(case=case, header=header, transport_error=unsent)
    env = ex.envelope
    return AuthCase(case=case, header=header, status=ex.status, error_type=(env.type or env.code_str) if env else None,
                    outcome=route_outcome(ex, root=root), answered_by=answered_by(ex, root=root),
                    transport_error=ex.transport_error.kind if ex.transport_error else None,
                    retry_after_s=ex.retry_after_s)


def _body(kind: str | None, config: HermesProxyRuntimeConfig) -> Any:
    if kind in ("chat", "chat_stream", "chat_large"):
        text = "Reply with: pong" if kind != "chat_large" else "Reply with: pong. " + "x" * LARGE_BODY_BYTES
        return chat_request_body(config, [{"role": "user", "content": text}], stream=kind == "chat_stream")
    if kind in ("responses", "responses_stream"):
        return responses_request_body(config, "Reply with: pong", stream=kind == "responses_stream")
    return {"completions": {"model": config.model, "prompt": "ping", "max_tokens": config.max_tokens},
            "embeddings": {"model": config.model, "input": "ping"}}.get(kind or "")


def probe(target: HermesProxyRuntimeConfig | str, *, auth_token: str | None = None, model: str | None = None,
          transport: httpx.BaseTransport | None = None, budget_s: float = ProbeSpec.model_fields["budget_s"].default,
          request_budget_s: float = ProbeSpec.model_fields["request_budget_s"].default,
          headers: dict[str, str] | None = None, provider: str | None = None, executable: str = "hermes") -> WireReport:
    """Probe ``target`` (a resolved config, or an endpoint) within ``budget_s``: once a forwarded route gets no whole
    answer within ``request_budget_s``, the rest are skipped (``upstream_slow``). ``executable``: the name hints use."""
    ProbeSpec.build(budget_s=budget_s, request_budget_s=request_budget_s)  # the spec's checks
    if isinstance(target, HermesProxyRuntimeConfig):
        base: dict[str, Any] = target.to_document(reveal_secrets=True)
    else:
        base = {"endpoint": target, "model": DEFAULT_MODEL, "auth_token": "probe"}
    cheap = {"max_tokens": 8, "temperature": 0, "stream": False,
             "extra_headers": {**base.get("extra_headers", {}), **(headers or {})}}
    given = {k: v for k, v in {"auth_token": auth_token, "model": model}.items() if v is not None}
    config = merge_runtime_config(base, cheap, given, where="probe")
    endpoint, redactor, started = config.endpoint, Redactor(config.secrets()), time.monotonic()
    report = WireReport(endpoint=endpoint)
    seen: dict[str, dict[str, str]] = {"proxy": {}, "upstream": {}}  # header names, by who answered
    exchanges: dict[str, Exchange] = {}
    connect_s = min(CONNECT_TIMEOUT_S, request_budget_s)
    with HermesClient(config, transport=transport, connect_timeout_s=connect_s) as client:

        def call(spec: RouteSpec, auth: bool | str = True, extra: dict[str, str] | None = None) -> Exchange | None:
            allowed = min(request_budget_s, started + budget_s - time.monotonic())
            if allowed <= 0.05:
                return None
            sent = {**({SCENARIO_HEADER: spec.scenario} if spec.scenario and report.upstream_known else {}),
                    **(extra or {})}
            ex = client.request(spec.method, spec.path, json=_body(spec.body, config), auth=auth, root=spec.root,
                                deadline_s=allowed, sse=spec.sse, headers=sent or None)
            if (owner := answered_by(ex, root=spec.root)) is not None:
                seen[owner].update(ex.headers)
            return ex

        # only hermes_nb's upstream names the scenarios it plays: only then are the stream variants asked for
        models = next(s for s in ROUTES if s.name == "models")
        if (asked := call(models, extra={SCENARIO_HEADER: PROBE_SCENARIO})) is not None and asked.status is not None:
            env = asked.envelope
            report.upstream_known = (asked.status == 400 and env is not None and env.code_str == "unknown_scenario"
                                     and all(v in (env.message or "") for v in STREAM_VARIANTS))
        slow: str | None = None  # the forwarded route the upstream did not answer, or finish, in time
        for spec in ROUTES:
            forwarded = spec.name not in LOCAL_ROUTES and (report.allowed_paths is None
                                                           or spec.path in report.allowed_paths)
            if (ex := None if forwarded and slow else call(spec)) is None:
                report.routes.append(RouteResult(name=spec.name, method=spec.method, path=spec.display_path,
                                                 outcome="skipped",
                                                 transport_error="upstream_slow" if forwarded and slow else "deadline"))
                continue
            exchanges[spec.name] = ex
            report.routes.append(result := _result(spec, ex, redactor))
            if report.allowed_paths is None and result.outcome == "path_not_allowed":
                report.allowed_paths = allowed_paths_of(result.error_message)
            if ex.streamed and ex.events:
                report.timelines[spec.name] = StreamTimeline.from_exchange(ex).to_dict()
            cut = ex.transport_error is not None and ex.transport_error.kind in ("read_timeout", "deadline")
            if forwarded and cut and any(r.status is not None for r in report.routes):
                slow = spec.name  # the proxy answers, its upstream not (or not all) in time: spare the rest
        for case, auth in AUTH_CASES:
            shown = ("(none)" if auth is False else "Bearer " + config.auth_token.get_secret_value() if auth is True
                     else auth.split(" ")[0] + " <redacted>")
            report.auth.append(_case(case, redactor.text(shown), None if slow else call(models, auth), root=False,
                                     unsent="upstream_slow" if slow else "deadline"))
        port = httpx.URL(endpoint).port or 80
        report.admission = [_case(which, f"{name}: {value.format(port='<port>')}",
                                  call(ROUTES[0], False, {name: value.format(port=port)}), root=True)
                            for which, name, value in ADMISSION_CASES]
    results = report.routes
    report.server = next((r.server for r in results if r.name == "health" and r.server), None) or next(
        (r.server for r in results if r.server), None)
    refused = next((r.error_message for r in results if r.outcome == "path_not_allowed" and r.error_message), None)
    health = exchanges.get("health")
    facts = detect_provider(health=health.json_body if health is not None and health.status == 200 else None,
                            allowed_message=refused, configured=provider or config.provider, executable=executable)
    report.provider, report.provider_source, report.upstream = facts.provider, facts.source, facts.upstream
    report.reachable = any(r.status is not None for r in results)
    report.bearer_required, report.stream_failure_shape = bearer_required(report.auth), stream_failure_shape(results)
    report.server_product, report.state = server_product(report.server), report_state(results)
    for prefix, owner in (("", "proxy"), ("relayed_", "upstream")):
        setattr(report, f"{prefix}cors_headers", sorted(h for h in seen[owner] if h.startswith("access-control-")))
        setattr(report, f"{prefix}rate_limit_headers", sorted(h for h in seen[owner] if RATE_LIMIT_HEADER_RE.match(h)))
    first = next((exchanges[r.name] for r in results if r.name in exchanges and (
        r.outcome in ("unreachable", "timeout", "transport_error", "not_local"))), None)
    if first is not None and report.state in ("unreachable", "not_local"):
        report.action = hint(read(first, endpoint), endpoint=endpoint, provider=report.provider, executable=executable)
    report.warnings = report_warnings(report) + facts.warnings
    report.matches = behaves_as(report)
    report.elapsed_s = round(time.monotonic() - started, 3)
    return report


def spike_contract(target: Target, config: HermesProxyRuntimeConfig, given: str | None = None, *,
                   package: str | None = None) -> tuple[str | None, Target]:
    """The contract a smoke's spike compares with, and the target with its release told: ``given``, a known release's
    own, else (a live proxy, probed once) the newest it behaves as, else the closest. The emulator: none."""
    if given:
        return given, target
    if package and target.release != UNKNOWN:
        return release_contract(package, target.release), target
    if target.kind != "live":
        return None, target
    report = probe(config, provider=target.provider, executable=target.executable)
    if not report.matches:
        return closest_contract(report), target
    package, _, version = report.matches[-1].rpartition(" ")
    return release_contract(package, version), target.model_copy(update={
        "release": ", ".join(report.matches), "release_source": "contract match: behaves as"})
