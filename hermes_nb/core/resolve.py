"""THE one place a runtime config is put together: defaults < the manifest's < the mission's overrides <
``HERMES_NB_*`` < ``--runtime-config-overrides`` < arguments; each key remembers where it came from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig, Provider, merge_runtime_config, parse_overrides_json
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import DEFAULT_MODEL, ENV_CONFIG, RUNTIME, manifest_path
from hermes_nb.core.providers import default_model_for
from hermes_nb.core.spec import Opt, Spec

if TYPE_CHECKING:  # the manifest's model and PyYAML (~30 ms) load only when there is a manifest to read (P4)
    from hermes_nb.core.manifest import AdapterManifest


def find_manifest(root: str | os.PathLike[str] | None, manifest: str | os.PathLike[str] | None) -> Path | None:
    if manifest is not None:
        return Path(manifest)
    default = manifest_path(root) if root is not None else None
    return default if default is not None and default.is_file() else None


def _manifest_layer(manifest: AdapterManifest | str | os.PathLike[str] | None,
                    root: str | os.PathLike[str] | None) -> tuple[dict[str, Any], str]:
    if manifest is None or isinstance(manifest, (str, os.PathLike)):
        path = find_manifest(root, manifest)
        if path is None:
            return {}, "manifest"
        from hermes_nb.core.manifest import load_manifest  # only now: see the import above

        loaded, label = load_manifest(path), f"manifest {path}"
    else:
        loaded, label = manifest, "manifest"
    if loaded.runtime != RUNTIME:
        raise ConfigError(f"{label}: runtime is {loaded.runtime!r}, expected {RUNTIME!r}")
    return dict(loaded.config.runtime_config) if loaded.config else {}, label


def resolve_runtime_config(*, manifest: AdapterManifest | str | os.PathLike[str] | None = None,
                           root: str | os.PathLike[str] | None = None,
                           mission_overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
                           overrides: Mapping[str, Any] | str | None = None, where: str = "runtime_config",
                           **explicit: Any) -> HermesProxyRuntimeConfig:
    """The validated runtime config from every source, in the order above (``environ`` None: ``os.environ``)."""
    if isinstance(overrides, str):
        overrides = parse_overrides_json(overrides)
    from_manifest, manifest_label = _manifest_layer(manifest, root)
    env = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, Any] | None]] = [
        ("default", {"model": DEFAULT_MODEL}), (manifest_label, from_manifest), ("mission", mission_overrides),
        ("env", {key: value for key, name in ENV_CONFIG.items() if (value := env.get(name))}), ("overrides", overrides),
        ("argument", {k: v for k, v in explicit.items() if v is not None})]
    origins: dict[str, str] = {}
    for label, layer in layers:
        for key in layer or {}:
            origins[key] = f"env {ENV_CONFIG[key]}" if label == "env" else label
    config = merge_runtime_config({}, *(layer for _, layer in layers), where=where)
    if origins.get("model") == "default" and (provider_model := default_model_for(config.provider)):
        config.model = provider_model
    config._origins = origins
    return config


class ConfigOptions(Spec):
    """The options every job that talks to a proxy shares: where its runtime config comes from."""

    endpoint: str | None = Field(None, description="proxy endpoint incl. /v1 (wins over the manifest and "
                                                   f"{ENV_CONFIG['endpoint']})")
    model: str | None = Field(None, description="model id, sent verbatim (wins over the manifest and "
                                                f"{ENV_CONFIG['model']})")
    provider: Provider | None = Field(None, description="the provider the proxy fronts (`hermes proxy start "
                                                        "--provider`): an emulator or rig hermes_nb starts fronts "
                                                        "it; a running proxy is expected to (a mismatch warns)")
    manifest: str | None = Field(None, description="adapter manifest whose runtime_config is the base (default: "
                                                   "<root>/.harness/adapters/hermes-proxy.yaml if present)")
    root: Annotated[str | None, Opt(faces=frozenset({"cli"}))] = Field(
        None, description="project root holding .harness/ (default: the current directory)")
    runtime_config_overrides: Annotated[str | None, Opt(faces=frozenset({"cli"}))] = Field(
        None, description="a JSON object merged over the manifest, the mission and the environment")

    def runtime_config(self, *, mission_overrides: Mapping[str, Any] | None = None,
                       environ: Mapping[str, str] | None = None, **explicit: Any) -> HermesProxyRuntimeConfig:
        return resolve_runtime_config(root=Path(self.root) if self.root else Path.cwd(), manifest=self.manifest,
                                      mission_overrides=mission_overrides, environ=environ,
                                      overrides=self.runtime_config_overrides, endpoint=self.endpoint,
                                      model=self.model, provider=self.provider, **explicit)
