"""The adapter check: is the configured proxy ready to run missions? ``GET <endpoint>/models`` with the configured
bearer after the identity step; the answer's reading gives the state, then the model list decides (docs/cli.md)."""

import difflib
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

import httpx
from pydantic import BaseModel, Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, validate_config
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import DEFAULT_MODEL, ERROR_PREFIX, MINIMUM_HERMES_PROXY_VERSION, plain_http_warning
from hermes_nb.core.manifest import AdapterManifest
from hermes_nb.core.model import Shown
from hermes_nb.core.providers import default_model_for, provider_info
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt
from hermes_nb.proxy.contracts import version_key
from hermes_nb.target import Target, identify, release_of
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.reading import CHECK_STATES, Reading, hint, read

CheckState = Literal["ready", "locked", "unreachable", "slow", "not_local", "rate_limited", "misconfigured", "error"]
CHECK_VERDICT = {"ready": "passed", "locked": "blocked", "unreachable": "blocked", "slow": "blocked",
                 "not_local": "blocked", "rate_limited": "blocked", "misconfigured": "failed", "error": "failed"}


class CheckSpec(ConfigOptions):
    """The adapter check's options (the CLI's, ``%hermes_check``'s and the adapter_check notebook's)."""

    budget_s: float = Field(30.0, gt=0, description="the longest wait for GET /models, headers and body "
                                                    "(a slow upstream answers late)")
    hermes_bin: Annotated[str | None, Opt(faces=frozenset({"cli"}))] = Field(
        None, description="the hermes executable of the proxy under test: its release is reported")
    scenario: Annotated[str, Opt(faces=frozenset({"magic", "notebook"}))] = Field(
        "ok", description="the embedded emulator's scenario (only when no endpoint is configured)")


class ModelChoice(BaseModel):
    """The model a job sends, and whether the proxy's list allows it."""

    model: str
    origin: str
    usable: bool = True
    error: str | None = None
    suggestion: str | None = None


class CheckResult(Shown, BaseModel):
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
    provider: str | None = None
    provider_source: str | None = None
    upstream: str | None = None
    release: str = "unknown"
    release_source: str | None = None
    #: ``configured``, or ``default for <provider>``; a listed model to use when the default is not listed
    model_origin: str | None = None
    model_suggestion: str | None = None
    #: seconds the proxy asked to wait (rate_limited)
    retry_after_s: float | None = None

    @property
    def verdict(self) -> str:
        return CHECK_VERDICT[self.state]

    def _repr_text_(self) -> str:
        first = f"; {self.errors[0]}" if self.errors else ""
        provider = f", provider {self.provider}" if self.provider else ""
        return Redactor().text(f"CheckResult({self.state} → {self.verdict}, {self.endpoint}{provider}, model "
                               f"{self.model}, {len(self.models)} models listed{first})")


def resolve_model(config: HermesProxyRuntimeConfig, provider: str | None,
                  listed: list[str] | None = None) -> ModelChoice:
    """The model to send: as configured, else ``provider``'s default (unusable when ``listed`` lacks it)."""
    # a resolved config remembers each key's origin; one built directly, which fields were set
    configured = config.origin("model") != "default" if config._origins else "model" in config.model_fields_set
    if configured:
        return ModelChoice(model=config.model, origin="configured")
    default = default_model_for(provider)
    model = default or config.model or DEFAULT_MODEL
    origin = f"default for {provider}" if default and provider_info(provider) else "default"
    if not listed or model in listed:
        return ModelChoice(model=model, origin=origin)
    close = difflib.get_close_matches(model, listed, n=1, cutoff=0.0)
    suggestion = close[0] if close else listed[0]
    who = f"provider {provider}'s default model" if default else "the default model"
    return ModelChoice(model=model, origin=origin, usable=False, suggestion=suggestion,
                       error=f"no model configured, and {who} {model!r} is not in the proxy's model list: "
                             f"{_listed(listed)}; suggested: --model {suggestion}")


def _listed(models: list[str]) -> str:
    return ", ".join(models[:10]) + (f", … ({len(models)} in all)" if len(models) > 10 else "")


def _state(r: Reading, endpoint: str, target: Target, budget_s: float) -> tuple[CheckState, str | None, str | None]:
    """(state, error, hint) of the ``/models`` answer's reading."""
    state = cast(CheckState, CHECK_STATES[r.kind])
    action = hint(r, endpoint=endpoint, provider=target.provider, executable=target.executable,
                  release=target.release)
    if state == "slow" and not target.healthy:
        state = "unreachable"  # nothing answered at all, not even /health
    status = f"HTTP {r.status}: " if r.status is not None else ""
    error = {
        "ready": None,
        "unreachable": f"endpoint unreachable: {endpoint} (connection refused)" if r.kind == "refused" else
                       f"no answer from {endpoint} in time ({r.kind.replace('_', ' ')})",
        "slow": f"the proxy answered /health at once, but GET {endpoint}/models did not answer within "
                f"{budget_s:g} s ({r.kind.replace('_', ' ')})",
        "not_local": f"{status}{r.code}: {r.detail}",
        "locked": f"configured but locked: {status}from proxy: {r.detail}",
        "rate_limited": f"rate limited: {status}{r.detail}"
                        + (f"; retry after {r.retry_after_s:g} s" if r.retry_after_s is not None else ""),
    }.get(state, f"{status}{r.detail}" if r.kind not in ("not_openai", "dns") else
          f"cannot resolve the host of {endpoint}: {r.detail}" if r.kind == "dns" else
          f"{status}{endpoint}/models is not a model list: {r.detail}")
    if state == "slow":
        action = (f"its upstream may be slow: re-run with a longer budget (now {budget_s:g} s); "
                  "GET /health answered, so the proxy itself is up")
    if r.kind == "path_not_allowed" and not httpx.URL(endpoint).path.rstrip("/").endswith("/v1"):
        url = httpx.URL(endpoint)
        parts = url.path.split("/")
        base = str(url.copy_with(path="/".join(parts[: parts.index("v1") + 1]))) if "v1" in parts else None
        error = f"HTTP 404 path_not_allowed for {endpoint}/models: the endpoint names a route, it should end at /v1"
        action = f"set the endpoint to end at /v1: {base}" if base else "set the endpoint to end at /v1"
    elif r.kind == "path_not_allowed":
        error = f"HTTP 404 path_not_allowed: {r.detail} (this proxy version does not forward /models)"
    return state, error, action


def check(config: HermesProxyRuntimeConfig | AdapterManifest | Mapping[str, Any] | None = None, *,
          spec: CheckSpec | None = None, target: Target | None = None,
          transport: httpx.BaseTransport | None = None, **options: Any) -> CheckResult:
    """Check the adapter; bad config or network is in the result, never raised. ``config``: a runtime config,
    manifest or mapping (None: ``spec``'s); ``target``: the job's identity when the caller has it."""
    spec = spec or CheckSpec.build(**options)
    try:
        if config is None:
            resolved = spec.runtime_config()
        elif isinstance(config, AdapterManifest):
            resolved = config.runtime_config()
        else:
            resolved = config if isinstance(config, HermesProxyRuntimeConfig) else validate_config(config)
    except ConfigError as exc:
        return CheckResult(available=False, state="misconfigured", errors=[ERROR_PREFIX + p for p in exc.problems],
                           hint="fix the runtime_config (see `hermes-nb schema`)")
    named = release_of(spec.hermes_bin) if spec.hermes_bin else (None, None, None)
    if target is None:
        target = identify(resolved, transport=transport, release=named[0], release_source=named[1],
                          executable=named[2])
    with HermesClient(resolved, transport=transport) as client:
        exchange = client.models(deadline_s=spec.budget_s)
    r = read(exchange, resolved.endpoint)
    state, error, action = _state(r, resolved.endpoint, target, spec.budget_s)
    models: list[str] = []
    body = exchange.json_body
    if state == "ready" and not (isinstance(body, dict) and isinstance(body.get("data"), list)):
        state, error = "error", f"HTTP {r.status} from {resolved.endpoint}/models is not a model list: {r.detail}"
        action = "is something else listening on this port? the proxy answers JSON with a `data` list"
    elif state == "ready":
        models = [str(m.get("id")) for m in body["data"] if isinstance(m, dict) and m.get("id") is not None]
    warnings = [*filter(None, [plain_http_warning(resolved.endpoint)]), *target.warnings]
    if target.release != "unknown" and version_key(target.release) < version_key(MINIMUM_HERMES_PROXY_VERSION):
        warnings.append(f"hermes-agent {target.release} is older than {MINIMUM_HERMES_PROXY_VERSION}, the first "
                        "release with `hermes proxy`")
    choice = resolve_model(resolved, target.provider, models)
    if state == "ready" and not choice.usable:
        state, error, action = "misconfigured", choice.error, f"set runtime_config.model (or --model), e.g. " \
                                                              f"{choice.suggestion}"
    elif state == "ready" and models and choice.model not in models:
        state, error = "misconfigured", f"model {choice.model!r} is not in the proxy's model list: {_listed(models)}"
        action = "set runtime_config.model (or --model) to one of the listed models"
    elif state == "ready" and not models:
        warnings.append(f"the proxy lists no models; cannot tell whether {choice.model!r} is available")
    redactor = Redactor(resolved.secrets())
    return CheckResult(
        available=state == "ready", state=state, endpoint=resolved.endpoint, model=choice.model, models=models,
        errors=[redactor.text(ERROR_PREFIX + error)] if error else [], warnings=redactor.data(warnings),
        hint=redactor.text(action) if action and state != "ready" else None, http_status=exchange.status,
        provider=target.provider, provider_source=target.provider_source, upstream=target.upstream,
        release=target.release, release_source=target.release_source, model_origin=choice.origin,
        model_suggestion=choice.suggestion, retry_after_s=r.retry_after_s if state == "rate_limited" else None)
