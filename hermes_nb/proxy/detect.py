"""Which provider a proxy fronts, told from its own answers, and the model a job uses when none is configured.

The proxy says it twice without being asked: ``GET /health`` (host root) answers
``{"status": "ok", "upstream": "<display name>", "authenticated": …}``, and a ``404 path_not_allowed``
lists the paths it forwards (``… Allowed: /chat/completions, …, /responses``). Each maps to a row of
:data:`hermes_nb.core.providers.PROVIDER_TABLE`. The configured ``provider`` is the third source; when
it and the detected one differ, the detected one is used and a warning names both.

:func:`resolve_model`: a configured model is used as given; with none configured, the provider's default
(``nous`` → ``nousresearch/hermes-4-405b``, ``xai`` → ``grok-4.3``); when the proxy lists models and that
default is not among them, the choice is unusable and the listed models and a suggestion are named —
the adapter check and the e2e notebook both call this, so they use one model and agree on it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any, Literal

from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import (
    default_model_for,
    provider_by_allowed_paths,
    provider_by_display_name,
    provider_info,
)

__all__ = ["ProviderFacts", "ModelChoice", "allowed_paths_of", "detect_provider", "fetch_health",
           "model_configured", "resolve_model"]

#: ``… is not forwarded by this proxy. Allowed: /chat/completions, /completions, …``
_ALLOWED = re.compile(r"Allowed:\s*(.+?)\s*$")


#: where a provider name came from: ``/health``, ``path_not_allowed`` (the allowed-path list), ``config``
ProviderSource = Literal["/health", "path_not_allowed", "config"]


class ProviderFacts(StrictModel):
    """What the proxy says about its provider."""

    #: the proxy's provider name (``nous``, ``xai``); None when nothing told it
    provider: str | None = None
    #: where it came from: ``/health``, ``path_not_allowed`` (the allowed-path list), ``config``
    source: ProviderSource | None = None
    #: ``/health``'s ``upstream`` verbatim (a name no row knows stays here, provider None)
    upstream: str | None = None
    #: ``/health``'s ``authenticated``
    authenticated: bool | None = None
    #: the configured provider, when there is one
    configured: str | None = None
    warnings: list[str] = []


class ModelChoice(StrictModel):
    """The model a job sends, and whether the proxy's list allows it."""

    model: str
    #: ``configured`` (someone chose it) or ``default for <provider>`` / ``default``
    origin: str
    #: False when none was configured, the proxy lists models and the default is not among them
    usable: bool = True
    error: str | None = None
    suggestion: str | None = None


def allowed_paths_of(message: str | None) -> list[str] | None:
    """The allowed-path list of a ``path_not_allowed`` message (None when it has none)."""
    found = _ALLOWED.search(message or "")
    if found is None:
        return None
    return [p.strip() for p in found.group(1).rstrip(".").split(",") if p.strip()]


def detect_provider(*, health: Any = None, allowed_message: str | None = None,
                    configured: str | None = None) -> ProviderFacts:
    """The provider from ``/health``'s body, else a ``path_not_allowed`` message, else the configuration."""
    upstream = health.get("upstream") if isinstance(health, Mapping) else None
    upstream = upstream if isinstance(upstream, str) and upstream.strip() else None
    auth = health.get("authenticated") if isinstance(health, Mapping) else None
    detected = provider_by_display_name(upstream)
    source: ProviderSource = "/health"
    if detected is None:
        paths = allowed_paths_of(allowed_message)
        detected = provider_by_allowed_paths(paths) if paths else None
        source = "path_not_allowed"
    warnings: list[str] = []
    if upstream is not None and provider_by_display_name(upstream) is None:
        warnings.append(f"GET /health names an upstream no hermes_nb row knows: {upstream!r} "
                        "(a provider newer than hermes_nb? hints fall back to generic ones)")
    if detected is not None and configured and configured != detected:
        warnings.append(f"provider mismatch: configured {configured!r}, but the proxy fronts {detected!r} "
                        f"(seen in {source}); using {detected!r} — set runtime_config.provider: {detected} "
                        f"or start the proxy with `hermes proxy start --provider {configured}`")
    if detected is None and configured:
        return ProviderFacts(provider=configured, source="config", upstream=upstream,
                             authenticated=auth if isinstance(auth, bool) else None, configured=configured,
                             warnings=warnings)
    return ProviderFacts(provider=detected, source=source if detected else None, upstream=upstream,
                         authenticated=auth if isinstance(auth, bool) else None, configured=configured,
                         warnings=warnings)


def fetch_health(client: Any, *, deadline_s: float = 2.0) -> Any:
    """``GET /health`` (host root, no bearer) through the one client; the JSON body of a 200, else None."""
    answer = client.request("GET", "/health", root=True, auth=False, deadline_s=deadline_s)
    return answer.json_body if answer.status == 200 else None


def model_configured(config: Any) -> bool:
    """Did anyone choose the model? (a resolved config remembers origins; a config built directly counts
    what was passed)."""
    origins = getattr(config, "_origins", None) or {}
    if origins:
        return origins.get("model", "default") != "default"
    return "model" in getattr(config, "model_fields_set", set())


def _suggest(wanted: str, listed: list[str]) -> str:
    close = difflib.get_close_matches(wanted, listed, n=1, cutoff=0.0)
    return close[0] if close else listed[0]


def resolve_model(config: Any, provider: str | None, listed: list[str] | None = None) -> ModelChoice:
    """The model to send: as configured, else ``provider``'s default (else hermes_nb's default).

    ``listed``: the proxy's ``GET /models`` ids (None or empty: unknown, any model goes).
    """
    if model_configured(config):
        return ModelChoice(model=config.model, origin="configured")
    default = default_model_for(provider)
    model = default or (config.model if config.model else DEFAULT_MODEL)
    origin = f"default for {provider}" if default and provider_info(provider) else "default"
    if not listed or model in listed:
        return ModelChoice(model=model, origin=origin)
    suggestion = _suggest(model, listed)
    shown = ", ".join(listed[:10]) + (f", … ({len(listed)} in all)" if len(listed) > 10 else "")
    who = f"provider {provider}'s default model" if default else "the default model"
    return ModelChoice(model=model, origin=origin, usable=False, suggestion=suggestion,
                       error=f"no model configured, and {who} {model!r} is not in the proxy's model list: {shown}; "
                             f"suggested: --model {suggestion}")
