"""Adapter check: is the configured proxy ready to run missions? (issue 4 §1, seed §10)

``GET <endpoint>/models`` with the configured bearer and extra headers (the
client's one request builder), one deadline covering headers *and* body.
Config validation runs first: an invalid config is ``misconfigured`` and no
request is sent.

=====================================================  =============  ===========================
response                                               state          hint
=====================================================  =============  ===========================
200 with a ``data`` list naming the model             ready          (warning when the list is empty)
200 with a ``data`` list without the model             misconfigured  the models listed (+ a suggestion
                                                                      when no model was configured)
200 with anything else (HTML from another server)      error
401/403, or envelope ``upstream_auth_failed`` & co.    locked         the proxy's own remediation, else
                                                                      the provider's re-auth commands
429, or envelope ``rate_limit_*``                      rate_limited   re-run after Retry-After
404 ``path_not_allowed``                               misconfigured  proxy version
404 ``text/plain``                                     misconfigured  endpoint probably lacks /v1
502/504 ``upstream_unreachable`` / ``upstream_timeout``   error          the proxy's upstream is down
connection refused / connect timeout / deadline        unreachable    ``hermes proxy start --provider …``
DNS failure                                            misconfigured  host name
anything else                                          error          (body excerpt)
=====================================================  =============  ===========================

Before ``/models`` the check asks ``GET /health`` which provider the proxy fronts
(:mod:`hermes_nb.proxy.detect`): the hints, and the model used when none is configured, are that
provider's (:mod:`hermes_nb.core.providers`); a configured provider that differs is a warning.
When a ``hermes`` executable is found (:func:`hermes_nb.proxy.executable.detect_hermes`),
its version is reported, with a warning below :data:`MINIMUM_HERMES_PROXY_VERSION`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, validate_config
from hermes_nb.core.endpoint_safety import plain_http_warning
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import ERROR_PREFIX
from hermes_nb.core.manifest import AdapterManifest
from hermes_nb.core.providers import reauth_hint, start_hint, upstream_down_hint
from hermes_nb.core.records import Exchange
from hermes_nb.core.redaction import Redactor
from hermes_nb.proxy.detect import detect_provider, fetch_health, resolve_model
from hermes_nb.proxy.executable import MINIMUM_HERMES_PROXY_VERSION, detect_hermes
from hermes_nb.wire.classify import AUTH_CODES, RATE_LIMIT_CODES, UPSTREAM_DOWN_CODES
from hermes_nb.wire.failures import plain_http_hint

__all__ = [
    "CheckResult",
    "CheckState",
    "CHECK_VERDICT",
    "adapter_check",
]

CONFIG_HINT = "fix the runtime_config (see `hermes-nb schema`)"
_EXCERPT = 200

CheckState = Literal["ready", "locked", "unreachable", "rate_limited", "misconfigured", "error"]
#: each state's verdict as a notebook job: ready passes; locked/unreachable/rate_limited need the operator
#: (or a later retry)
CHECK_VERDICT = {"ready": "passed", "locked": "blocked", "unreachable": "blocked", "rate_limited": "blocked",
                 "misconfigured": "failed", "error": "failed"}


class CheckResult(BaseModel):
    """The adapter check's verdict (``--json`` prints this)."""

    available: bool
    state: CheckState
    endpoint: str | None = None
    model: str | None = None
    models: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    hint: str | None = None
    http_status: int | None = None
    hermes_bin: str | None = None
    hermes_version: str | None = None
    #: the provider the proxy fronts (``nous``, ``xai``): detected from ``/health``, else configured
    provider: str | None = None
    #: where :attr:`provider` came from: ``/health``, ``path_not_allowed``, ``config``
    provider_source: str | None = None
    #: ``/health``'s ``upstream`` (the provider's display name)
    upstream: str | None = None
    #: ``configured``, or ``default for <provider>`` when nobody chose the model
    model_origin: str | None = None
    #: a listed model to use when the default is not listed
    model_suggestion: str | None = None
    #: seconds the proxy asked to wait (rate_limited)
    retry_after_s: float | None = None

    @property
    def verdict(self) -> str:
        """passed / blocked / failed (:data:`CHECK_VERDICT`)."""
        return CHECK_VERDICT[self.state]

    def _repr_text_(self) -> str:
        first = f"; {self.errors[0]}" if self.errors else ""
        provider = f", provider {self.provider}" if self.provider else ""
        return Redactor().text(f"CheckResult({self.state} → {self.verdict}, {self.endpoint}{provider}, model "
                               f"{self.model}, {len(self.models)} models listed{first})")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("CheckResult(...)" if cycle else self._repr_text_())

    def _repr_html_(self) -> str:
        from hermes_nb.core.reprs import box, kv_html

        shown = ", ".join(self.models[:8]) + (f", … ({len(self.models)} in all)" if len(self.models) > 8 else "")
        pairs: list[tuple[str, Any]] = [("state", self.state), ("verdict", self.verdict),
                                        ("endpoint", self.endpoint),
                                        ("provider", _provider_label(self.provider, self.upstream,
                                                                     self.provider_source)),
                                        ("model", self.model + (f" ({self.model_origin})" if self.model_origin
                                                                and self.model_origin != "configured" else "")
                                         if self.model else None),
                                        ("models", shown or None), ("HTTP status", self.http_status),
                                        ("hermes version", self.hermes_version), ("hint", self.hint)]
        pairs += [("error", e) for e in self.errors] + [("warning", w) for w in self.warnings]
        return box("adapter check", self.state, kv_html(pairs, badges=("state", "verdict")))

    @classmethod
    def misconfigured(cls, exc: ConfigError, **fields: Any) -> CheckResult:
        """The verdict for a config that does not validate (no request is sent)."""
        return cls(available=False, state="misconfigured", errors=[ERROR_PREFIX + p for p in exc.problems],
                   hint=CONFIG_HINT, **fields)


def _provider_label(provider: str | None, upstream: str | None, source: str | None) -> str | None:
    """``xai (xAI Grok OAuth, from /health)``"""
    if provider is None:
        return upstream
    extra = [x for x in (upstream, f"from {source}" if source else None) if x]
    return provider + (f" ({', '.join(extra)})" if extra else "")


def _config_of(source: HermesProxyRuntimeConfig | AdapterManifest | Mapping[str, Any]) -> HermesProxyRuntimeConfig:
    if isinstance(source, HermesProxyRuntimeConfig):
        return source
    if isinstance(source, AdapterManifest):
        return source.runtime_config()
    if isinstance(source, Mapping):
        return validate_config(source)
    raise ConfigError(f"adapter_check: expected a runtime config or manifest, got {type(source).__name__}")


def _excerpt(ex: Exchange) -> str:
    body = " ".join((ex.body_text or "").split())
    if not body:
        return "empty body"
    return body if len(body) <= _EXCERPT else body[:_EXCERPT] + "…"


def _codes(ex: Exchange) -> frozenset[str]:
    return ex.envelope.codes if ex.envelope is not None else frozenset()


def _ends_at_v1(endpoint: str) -> bool:
    return httpx.URL(endpoint).path.rstrip("/").endswith("/v1")


def _base_of(endpoint: str) -> str | None:
    """``http://h:p/v1/chat/completions`` → ``http://h:p/v1`` (None when the path has no /v1 segment)."""
    url = httpx.URL(endpoint)
    parts = url.path.split("/")
    if "v1" not in parts:
        return None
    return str(url.copy_with(path="/".join(parts[: parts.index("v1") + 1]), query=None, fragment=None))


def _classify(ex: Exchange, config: HermesProxyRuntimeConfig, provider: str | None = None) -> dict[str, Any]:
    endpoint = config.endpoint
    failure = ex.transport_error
    if ex.status is None:
        kind = failure.kind if failure else "other"
        message = failure.message if failure else "no response"
        if kind == "connect_refused":
            return dict(state="unreachable", error=f"endpoint unreachable: {endpoint} (connection refused)",
                        hint=start_hint(provider))
        if kind in ("connect_timeout", "read_timeout", "deadline"):
            return dict(state="unreachable", error=f"no answer from {endpoint} in time ({kind}): {message}",
                        hint=start_hint(provider) if kind == "connect_timeout" else
                        "the proxy took the connection but GET /models did not answer in time: its upstream may "
                        "be slow; re-run with a longer --deadline, or start the proxy if it is not running")
        if kind == "dns":
            return dict(state="misconfigured", error=f"cannot resolve the host of {endpoint}: {message}",
                        hint="check runtime_config.endpoint (the proxy listens on http://127.0.0.1:8645/v1)")
        plain = plain_http_hint(endpoint, failure)
        if plain is not None:  # https to the proxy's plain-http port: a configuration error with a fix
            return dict(state="misconfigured", error=f"cannot talk to {endpoint} (TLS handshake): {message}",
                        hint=plain)
        return dict(state="error", error=f"cannot talk to {endpoint} ({kind}): {message}")
    status = ex.status
    codes = _codes(ex)
    message = ex.envelope.message if ex.envelope and ex.envelope.message else _excerpt(ex)
    if status in (401, 403) or codes & AUTH_CODES:
        return dict(state="locked", error=f"configured but locked: HTTP {status} from proxy: {message}",
                    hint=reauth_hint(provider, ex.envelope.message if ex.envelope else None))
    if status == 429 or codes & RATE_LIMIT_CODES:
        after = f"; retry after {ex.retry_after_s:g} s" if ex.retry_after_s is not None else ""
        return dict(state="rate_limited", error=f"rate limited: HTTP {status}: {message}{after}",
                    hint="re-run later" + (f" (Retry-After: {ex.retry_after_s:g} s)" if after else ""))
    if 200 <= status < 300:
        if failure is not None:
            return dict(state="error", error=f"model list cut off ({failure.kind}): {failure.message}")
        body = ex.json_body
        if isinstance(body, dict) and isinstance(body.get("data"), list):
            return dict(state="ready", models=[str(m.get("id")) for m in body["data"]
                                               if isinstance(m, dict) and m.get("id") is not None])
        ctype = ex.content_type or "no content-type"
        return dict(state="error",
                    error=f"HTTP {status} from {endpoint}/models is not a model list ({ctype}): {_excerpt(ex)}",
                    hint="is something else listening on this port? the proxy answers JSON with a `data` list")
    if status == 404 and "path_not_allowed" in codes and not _ends_at_v1(endpoint):
        base = _base_of(endpoint)
        return dict(state="misconfigured",
                    error=f"HTTP 404 path_not_allowed for {endpoint}/models: the endpoint names a route, "
                          "it should end at /v1",
                    hint=f"set the endpoint to end at /v1: {base}" if base else "set the endpoint to end at /v1")
    if status == 404 and "path_not_allowed" in codes:
        return dict(state="misconfigured",
                    error=f"HTTP 404 path_not_allowed: {message} (this proxy version does not forward /models)",
                    hint=f"use hermes-agent >= {MINIMUM_HERMES_PROXY_VERSION} and check the endpoint path")
    if status == 404 and (ex.content_type or "").startswith("text/plain"):
        return dict(state="misconfigured", error=f"HTTP 404 from {endpoint}/models: {_excerpt(ex)}",
                    hint="the endpoint path probably lacks /v1 (e.g. http://127.0.0.1:8645/v1)")
    if status in (502, 504) and codes & UPSTREAM_DOWN_CODES:
        return dict(state="error", error=f"HTTP {status} from the proxy: its upstream did not answer: {message}",
                    hint=upstream_down_hint(provider, message))
    return dict(state="error", error=f"HTTP {status}: {message}")


def adapter_check(config_or_manifest: HermesProxyRuntimeConfig | AdapterManifest | Mapping[str, Any], *,
                  transport: httpx.BaseTransport | None = None, deadline_s: float = 5.0,
                  hermes_bin: str | os.PathLike[str] | Literal[False] | None = None) -> CheckResult:
    """Check the adapter (never raises for bad config or network: it is in the result).

    ``hermes_bin=False`` skips the hermes version lookup.
    """
    bin_path = version = None
    version_warnings: list[str] = []
    if hermes_bin is not False:
        bin_path, version, version_warnings = detect_hermes(hermes_bin)
    try:
        config = _config_of(config_or_manifest)
    except ConfigError as exc:
        return CheckResult.misconfigured(exc, warnings=version_warnings, hermes_bin=bin_path, hermes_version=version)
    from hermes_nb.wire.client import HermesClient

    with HermesClient(config, transport=transport) as client:
        facts = detect_provider(health=fetch_health(client, deadline_s=min(2.0, deadline_s)),
                                configured=config.provider)
        exchange = client.models(deadline_s=deadline_s)
    verdict = _classify(exchange, config, facts.provider)
    warnings = list(version_warnings) + list(filter(None, [plain_http_warning(config.endpoint)])) + facts.warnings
    models: list[str] = verdict.get("models", [])
    choice = resolve_model(config, facts.provider, models)
    if verdict["state"] == "ready" and not choice.usable:
        verdict = dict(state="misconfigured", models=models, error=choice.error,
                       hint=f"set runtime_config.model (or --model), e.g. {choice.suggestion}")
    elif verdict["state"] == "ready" and models and choice.model not in models:
        # run would block on it (model_missing): not ready (issue 10); an empty list cannot tell
        listed = ", ".join(models[:10]) + (f", … ({len(models)} in all)" if len(models) > 10 else "")
        verdict = dict(state="misconfigured", models=models,
                       error=f"model {choice.model!r} is not in the proxy's model list: {listed}",
                       hint="set runtime_config.model (or --model) to one of the listed models")
    elif verdict["state"] == "ready" and not models:
        warnings.append(f"the proxy lists no models; cannot tell whether {choice.model!r} is available")
    error = verdict.get("error")
    redactor = Redactor(config.secrets())  # the client masks known secrets; this adds secret shapes
    return CheckResult(
        available=verdict["state"] == "ready",
        state=verdict["state"],
        endpoint=config.endpoint,
        model=choice.model,
        models=models,
        errors=[redactor.text(ERROR_PREFIX + error)] if error else [],
        warnings=redactor.data(warnings),
        hint=redactor.text(verdict["hint"]) if verdict.get("hint") else None,
        http_status=exchange.status,
        hermes_bin=bin_path,
        hermes_version=version,
        provider=facts.provider,
        provider_source=facts.source,
        upstream=facts.upstream,
        model_origin=choice.origin,
        model_suggestion=choice.suggestion,
        retry_after_s=exchange.retry_after_s if verdict["state"] == "rate_limited" else None,
    )
