"""The thing under test, established once per job as one :class:`Target`, handed on, never resolved again. The
release is only what the rig, ``--hermes-bin`` or ``/health`` says, never an unrelated local install's."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal

import httpx

from hermes_nb import emulator  # its server (aiohttp) loads at the first embedded emulator, not here
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ConfigError, HermesError
from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import provider_by_allowed_paths, provider_by_display_name
from hermes_nb.emulator.scenarios import PROFILE_HEADER, SCENARIO_HEADER
from hermes_nb.wire.client import HermesClient

TargetKind = Literal["emulator", "rig", "live"]
UNKNOWN = "unknown"
#: a scenario no emulator knows: hermes_nb's emulator answers it with 400 ``unknown_scenario``
PROBE_SCENARIO = "hermes-nb-target-check"
#: ``/health`` keys that could carry the proxy's version (no release so far sends one)
_HEALTH_VERSION_KEYS = ("hermes_agent_version", "hermes_version", "version")


class Target(StrictModel):
    """The endpoint under test and what is known of it (plain data: it crosses into the notebooks)."""

    endpoint: str
    kind: TargetKind
    provider: str | None = None
    #: ``/health``, ``path_not_allowed``, ``config``, ``rig``, ``emulator``
    provider_source: str | None = None
    upstream: str | None = None
    release: str = UNKNOWN
    #: ``rig: <exe>``, ``--hermes-bin <exe>``, ``/health``
    release_source: str | None = None
    #: the executable every hint names (``hermes``, ``hermesx``)
    executable: str = "hermes"
    #: why the kind is what it is, when it was not taken as given
    evidence: str | None = None
    #: ``/health`` answered (the proxy itself is up, whatever its upstream does)
    healthy: bool = False
    warnings: list[str] = []

    def to_parameter(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_parameter(cls, value: dict[str, Any]) -> Target:
        return cls.model_validate(value)

    @property
    def release_label(self) -> str:
            return f"{self.release} ({self.release_source})" if self.release_source else self.release


class ProviderFacts(StrictModel):
    """What the proxy says about its provider and where that came from."""

    provider: str | None = None
    source: str | None = None
    upstream: str | None = None
    warnings: list[str] = []


def allowed_paths_of(message: str | None) -> list[str] | None:
    """The list of ``… is not forwarded by this proxy. Allowed: /chat/completions, …`` (None: no list)."""
    found = re.search(r"Allowed:\s*(.+?)\s*$", message or "")
    if found is None:
        return None
    return [p.strip() for p in found.group(1).rstrip(".").split(",") if p.strip()]


def detect_provider(*, health: Any = None, allowed_message: str | None = None,
                    configured: str | None = None, executable: str = "hermes") -> ProviderFacts:
    """The provider from ``/health``'s ``upstream``, else a ``path_not_allowed`` message, else the configuration."""
    upstream = health.get("upstream") if isinstance(health, Mapping) else None
    upstream = upstream if isinstance(upstream, str) and upstream.strip() else None
    detected, source = provider_by_display_name(upstream), "/health"
    if detected is None:
        paths = allowed_paths_of(allowed_message)
        detected, source = (provider_by_allowed_paths(paths) if paths else None), "path_not_allowed"
    warnings: list[str] = []
    if upstream is not None and provider_by_display_name(upstream) is None:
        warnings.append(f"GET /health names an upstream no hermes_nb row knows: {upstream!r} "
                        "(a provider newer than hermes_nb? hints fall back to generic ones)")
    if detected is not None and configured and configured != detected:
        warnings.append(f"provider mismatch: configured {configured!r}, but the proxy fronts {detected!r} "
                        f"(seen in {source}); using {detected!r}: set runtime_config.provider: {detected} "
                        f"or start the proxy with `{executable} proxy start --provider {configured}`")
    if detected is None and configured:
        return ProviderFacts(provider=configured, source="config", upstream=upstream, warnings=warnings)
    return ProviderFacts(provider=detected, source=source if detected else None, upstream=upstream,
                         warnings=warnings)


def identify(config: HermesProxyRuntimeConfig, *, kind: TargetKind = "live", release: str | None = None,
             release_source: str | None = None, executable: str | None = None,
             transport: httpx.BaseTransport | None = None, budget_s: float = 2.0,
             ask_emulator: bool = False) -> Target:
    """Ask ``config.endpoint`` once (``GET /health``) what it is; ``ask_emulator``: also ask whether hermes_nb's
    emulator answers (the smoke's receipts must not call an emulator live)."""
    evidence = profile = None
    with HermesClient(config, transport=transport, connect_timeout_s=min(budget_s, 2.0)) as client:
        answer = client.request("GET", "/health", root=True, auth=False, deadline_s=budget_s)
        healthy, body = answer.status is not None, answer.json_body if answer.status == 200 else None
        if kind == "live" and healthy and ask_emulator:
            # hermes_nb's emulator answers an unknown scenario with 400; the proxy forwards it, an upstream ignores it
            probe = client.models(headers={SCENARIO_HEADER: PROBE_SCENARIO}, deadline_s=budget_s)
            if probe.status == 400 and probe.envelope is not None and probe.envelope.code == "unknown_scenario":
                profile = probe.headers.get(PROFILE_HEADER.lower())
                evidence = (f"GET {client.endpoint}/models with {SCENARIO_HEADER}: {PROBE_SCENARIO} answered 400 "
                            f"unknown_scenario from the emulator's {profile or 'hermes-agent'} profile")
    facts = detect_provider(health=body, configured=config.provider, executable=executable or "hermes")
    if evidence is not None and profile in ("upstream", "minimal") and isinstance(body, dict) and "upstream" in body:
        # a real hermes proxy (its /health) in front of the emulator's upstream profile: the proxy is the target
        kind, evidence = "rig", f"a hermes proxy in front of the emulator's {profile} profile ({evidence})"
    elif kind == "emulator" or evidence is not None:
        return Target(endpoint=config.endpoint, kind="emulator", provider=facts.provider,
                      provider_source=facts.source, upstream=facts.upstream, evidence=evidence, healthy=healthy,
                      warnings=facts.warnings)
    if release is None and isinstance(body, dict):
        found = next((str(body[k]) for k in _HEALTH_VERSION_KEYS if isinstance(body.get(k), str)), None)
        release, release_source = (found, "/health") if found else (None, None)
    return Target(endpoint=config.endpoint, kind=kind, provider=facts.provider, provider_source=facts.source,
                  upstream=facts.upstream, release=release or UNKNOWN,
                  release_source=release_source if release else None, executable=executable or "hermes",
                  evidence=evidence, healthy=healthy, warnings=facts.warnings)


def release_of(hermes_bin: str | Path) -> tuple[str, str, str]:
    """(release, source, executable name) of an executable the operator named; raises HermesError if unusable."""
    from hermes_nb.rig.executable import install_of  # the rig's wing, reached at --hermes-bin only

    if not (Path(hermes_bin).is_file() and os.access(hermes_bin, os.X_OK)):
        raise ConfigError(f"--hermes-bin {hermes_bin}: not an executable file")
    install = install_of(hermes_bin)
    if install.version is None:
        raise HermesError(f"--hermes-bin {install.bin}: cannot tell its release")
    return install.version, f"--hermes-bin {install.bin} ({install.package or 'package unknown'})", install.executable


def establish(config: HermesProxyRuntimeConfig, stack: ExitStack, *, rig: Any = None, scenario: str = "ok",
              release: tuple[str, str, str] | None = None, ask_emulator: bool = False,
              transport: httpx.BaseTransport | None = None) -> tuple[Target, HermesProxyRuntimeConfig]:
    """The job's identity step: the ``rig``, else the configured endpoint, else an embedded emulator entered on
    ``stack``; the target and ``config`` aimed at it. ``release``: :func:`release_of` ``--hermes-bin``."""
    if rig is not None:
        aimed = config.with_endpoint(rig.endpoint, origin="rig")
        install = rig.install
        return identify(aimed, kind="rig", release=install.version, transport=transport, executable=install.executable,
                        release_source=f"rig: {install.bin} ({install.package or 'package unknown'})"), aimed
    if config.origin("endpoint") == "default":
        return stack.enter_context(embedded_target(config, scenario=scenario))
    named = release or (None, None, None)
    return identify(config, release=named[0], release_source=named[1], executable=named[2], transport=transport,
                    ask_emulator=ask_emulator), config


@contextmanager
def embedded_target(config: HermesProxyRuntimeConfig, *, scenario: str = "ok", profile: str = "hermes-agent",
                    **settings: Any) -> Iterator[tuple[Target, HermesProxyRuntimeConfig]]:
    """An embedded emulator for a job that names no endpoint: its Target and the config aimed at it."""
    provider = config.provider or "nous"
    with emulator.serve_emulator(profile=profile, scenario=scenario, provider=provider, **settings) as handle:
        aimed = config.with_endpoint(handle.endpoint, origin="emulator")
        yield Target(endpoint=handle.endpoint, kind="emulator", provider=provider, provider_source="emulator",
                     healthy=True, evidence=f"the embedded emulator ({profile}, scenario {scenario})"), aimed
