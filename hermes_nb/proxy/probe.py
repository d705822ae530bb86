"""The seed's wire-format spike as code: every route, the auth handoff, the admission layer and the failure shapes of
one endpoint, through :meth:`hermes_nb.wire.client.HermesClient.request`, with cheap bodies (``max_tokens`` 8). HTTP
and network failures never raise: the routes of the report say what happened, within the overall deadline."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import httpx
from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, merge_runtime_config
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, DEFAULT_MODEL
from hermes_nb.core.records import Exchange
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt
from hermes_nb.core.timeline import StreamTimeline
from hermes_nb.emulator.scenarios import SCENARIO_HEADER
from hermes_nb.proxy.contracts import behaves_as, closest_contract, release_contract
from hermes_nb.proxy.report import (
    ADMISSION_CASES,
    AUTH_CASES,
    LOCAL_ROUTES,
    RATE_LIMIT_HEADER_RE,
    ROUTES,
    STREAM_VARIANTS,
    AuthCase,
    RouteResult,
    RouteSpec,
    WireReport,
    bearer_required,
    floor_missing,
    report_state,
    report_warnings,
    server_product,
    sse_events,
    stream_failure_shape,
)
from hermes_nb.target import PROBE_SCENARIO, UNKNOWN, Target, allowed_paths_of, detect_provider
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import answered_by, body_kind, ended, hint, read, route_outcome

__all__ = ["ProbeSpec", "probe", "probe_config", "spike_contract"]

_CLI = frozenset({"cli"})


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

LARGE_BODY_BYTES = 1_500_000


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
        server=ex.server,
        transport_error=ex.transport_error.kind if ex.transport_error else None,
        done=ex.done if spec.sse and ex.streamed else None, sse_events=sse_events(ex),
        retry_after_s=ex.retry_after_s, elapsed_s=round(elapsed, 3),
    )


def _case(case: str, header: str, ex: Exchange | None, *, root: bool, unsent: str = "deadline") -> AuthCase:
    if ex is None:
        return AuthCase(case=case, header=header, transport_error=unsent)
    env = ex.envelope
    return AuthCase(case=case, header=header, status=ex.status, error_type=(env.type or env.code_str) if env else None,
                    outcome=route_outcome(ex, root=root), answered_by=answered_by(ex, root=root),
                    transport_error=ex.transport_error.kind if ex.transport_error else None,
                    retry_after_s=ex.retry_after_s)


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
    """``target``'s config (for a bare endpoint: bearer ``probe``, the default model), bodies kept cheap; arguments
    win."""
    if isinstance(target, str):
        base: dict[str, Any] = {"endpoint": target, "model": DEFAULT_MODEL, "auth_token": "probe"}
    else:
        base = target.to_document(reveal_secrets=True)
    given = {"auth_token": auth_token, "model": model}
    cheap = {"max_tokens": 8, "temperature": 0, "stream": False,
             "extra_headers": {**base.get("extra_headers", {}), **(headers or {})}}
    return merge_runtime_config(base, cheap, {k: v for k, v in given.items() if v is not None}, where="probe")


def probe(target: HermesProxyRuntimeConfig | str, *, auth_token: str | None = None, model: str | None = None,
          transport: httpx.BaseTransport | None = None, budget_s: float = ProbeSpec.model_fields["budget_s"].default,
          request_budget_s: float = ProbeSpec.model_fields["request_budget_s"].default,
          headers: dict[str, str] | None = None, provider: str | None = None, executable: str = "hermes") -> WireReport:
    """Probe ``target`` (a resolved runtime config, or an endpoint ``http://host:port/v1``).

    First whether hermes_nb's upstream answers (``upstream_known``), then the proxy's own routes, the forwarded ones
    (once one gets no whole answer within ``request_budget_s``, the rest are skipped: ``upstream_slow``), the auth
    handoff and the admission cases, all within ``budget_s``. ``provider``: the one expected (a mismatch warns);
    ``executable``: the name hints use. Raises ConfigError for an invalid endpoint, UsageError for a bad budget."""
    ProbeSpec.build(budget_s=budget_s, request_budget_s=request_budget_s)  # the spec's checks

    config = probe_config(target, auth_token=auth_token, model=model, headers=headers)
    endpoint, model, auth_token = config.endpoint, config.model, config.auth_token.get_secret_value()
    redactor = Redactor(config.secrets())
    started = time.monotonic()
    results: list[RouteResult] = []
    cases: list[AuthCase] = []
    seen: dict[str, dict[str, str]] = {"proxy": {}, "upstream": {}}
    connect_s = min(CONNECT_TIMEOUT_S, request_budget_s)
    with HermesClient(config, transport=transport, connect_timeout_s=connect_s) as client:

        def call(spec: RouteSpec, auth: bool | str = True,
                 extra: dict[str, str] | None = None) -> tuple[Exchange | None, float]:
            t0 = time.monotonic()
            allowed = min(request_budget_s, started + budget_s - t0)
            if allowed <= 0.05:
                return None, 0.0
            sent = {**({SCENARIO_HEADER: spec.scenario} if spec.scenario and known else {}), **(extra or {})}
            ex = client.request(spec.method, spec.path, json=_body(spec.body, model, config), auth=auth,
                                root=spec.root, deadline_s=allowed, sse=spec.sse, headers=sent or None)
            owner = answered_by(ex, root=spec.root)
            if owner is not None:
                seen[owner].update(ex.headers)
            return ex, time.monotonic() - t0

        # hermes_nb's upstream (behind the proxy, or the emulator itself) names the scenarios it plays: only then are
        # the stream variants asked for (a stale proxy never forwards the question)
        known: bool | None = None
        models = next(s for s in ROUTES if s.name == "models")
        asked, _ = call(models, extra={SCENARIO_HEADER: PROBE_SCENARIO})
        if asked is not None and asked.status is not None:
            env = asked.envelope
            known = (asked.status == 400 and env is not None and env.code_str == "unknown_scenario"
                     and all(v in (env.message or "") for v in STREAM_VARIANTS))
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
            cut = ex.transport_error is not None and ex.transport_error.kind in ("read_timeout", "deadline")
            if forwarded and cut and any(r.status is not None for r in results):
                slow = spec.name  # the proxy answers, its upstream not (or not all) in time: spare the rest
        for case, auth in AUTH_CASES:
            shown = ("(none)" if auth is False
                     else "Bearer " + auth_token if auth is True else auth.split(" ")[0] + " <redacted>")
            cases.append(_case(case, redactor.text(shown), None if slow else call(models, auth)[0], root=False,
                               unsent="upstream_slow" if slow else "deadline"))
        port = httpx.URL(endpoint).port or 80
        admission = [_case(which, f"{name}: {value.format(port='<port>')}",
                           call(ROUTES[0], False, {name: value.format(port=port)})[0], root=True)
                     for which, name, value in ADMISSION_CASES]
    health = next((r for r in results if r.name == "health" and r.server), None)
    server = health.server if health else next((r.server for r in results if r.server), None)
    refused = next((r.error_message for r in results if r.outcome == "path_not_allowed" and r.error_message), None)
    health_ex = exchanges.get("health")
    facts = detect_provider(health=health_ex.json_body if health_ex is not None and health_ex.status == 200 else None,
                            allowed_message=refused, configured=provider or config.provider, executable=executable)
    report = WireReport(
        endpoint=endpoint, routes=results, auth=cases, admission=admission, upstream_known=known,
        reachable=any(r.status is not None for r in results),
        bearer_required=bearer_required(cases), stream_failure_shape=stream_failure_shape(results),
        server=server, server_product=server_product(server),
        cors_headers=_headers(seen["proxy"], "access-control-"), rate_limit_headers=_headers(seen["proxy"]),
        relayed_cors_headers=_headers(seen["upstream"], "access-control-"),
        relayed_rate_limit_headers=_headers(seen["upstream"]),
        elapsed_s=round(time.monotonic() - started, 3),
        provider=facts.provider, provider_source=facts.source, upstream=facts.upstream,
        allowed_paths=allowed_paths_of(refused),
    )
    report.timelines.update(timelines)
    report.state = report_state(results)
    first = next((exchanges[r.name] for r in results if r.name in exchanges and (
        r.outcome in ("unreachable", "timeout", "transport_error", "not_local"))), None)
    if first is not None and report.state in ("unreachable", "not_local"):
        report.action = hint(read(first, endpoint), endpoint=endpoint, provider=report.provider, executable=executable)
    report.warnings = report_warnings(report) + facts.warnings
    report.matches = behaves_as(report)
    return report


def _headers(headers: dict[str, str], prefix: str | None = None) -> list[str]:
    """The CORS (``prefix``) or rate-limit header names among ``headers``."""
    return sorted(h for h in headers if (h.startswith(prefix) if prefix else RATE_LIMIT_HEADER_RE.match(h)))


def spike_contract(target: Target, config: HermesProxyRuntimeConfig, given: str | None = None, *,
                   package: str | None = None) -> tuple[str | None, Target]:
    """The contract a smoke's spike compares with, and the target with its release told: ``given``; a known
    release's own (``package``: the rig's, ``--hermes-bin``'s); for a live proxy of unknown release, probed once, the
    newest it behaves as (its release: ``contract match``), else the closest. The emulator: none."""
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
