"""The adapter manifest (``uh.adapter.v0``): model, template, IO; and the JSON Schemas (``hermes-nb schema``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from hermes_nb.core.config import HermesProxyRuntimeConfig, format_validation_error, validate_config
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import DEFAULT_AUTH_TOKEN, DEFAULT_ENDPOINT, DEFAULT_MODEL, DEFAULT_TIMEOUT_MS, RUNTIME
from hermes_nb.core.io import write_atomic
from hermes_nb.core.model import StrictModel
from hermes_nb.core.yamlio import dump_yaml, load_yaml, read_text_file


class AdapterConfig(StrictModel):
    cli_command: str | None = None
    default_toolsets: list[str] = Field(default_factory=list)
    default_provider: str = ""
    default_model: str = ""
    worktree_mode: bool = False
    pass_session_id: bool = True
    runtime_config: dict[str, Any] = Field(default_factory=dict)


class AdapterManifest(StrictModel):
    """``uh.adapter.v0`` manifest (``.harness/adapters/<id>.yaml``)."""

    schema_version: Literal["uh.adapter.v0"] | None = None
    id: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    name: str = Field(..., min_length=1)
    runtime: str = Field(..., min_length=1)
    description: str = ""
    capabilities: list[str] = Field(default_factory=list)
    status: Literal["active", "experimental", "deprecated"] = "active"
    config: AdapterConfig | None = None

    def runtime_config(self) -> HermesProxyRuntimeConfig:
        return validate_config(self.config.runtime_config if self.config else {})


def manifest_template(*, uh_strict: bool = False, endpoint: str = DEFAULT_ENDPOINT,
                      model: str = DEFAULT_MODEL) -> AdapterManifest:
    """The seed §9 manifest (status experimental) for ``adapter add``."""
    runtime_config: dict[str, Any] = {"endpoint": endpoint, "model": model, "provider": "nous",
                                      "request_timeout_ms": DEFAULT_TIMEOUT_MS, "extra_headers": {}}
    if not uh_strict:
        runtime_config.update({"auth_token": DEFAULT_AUTH_TOKEN, "temperature": 0, "stream": True})
    validate_config(runtime_config)
    return AdapterManifest(
        id=RUNTIME, name="Hermes proxy", runtime=RUNTIME, status="experimental",
        description=("HTTP client targeting a local `hermes proxy` instance.\n"
                     "Provider-agnostic OAI-compat routing for OAuth-backed subscriptions.\n"),
        capabilities=["subscription-auth", "oai-compat", "http-transport", "sentinel-protocol"],
        config=AdapterConfig(pass_session_id=False, runtime_config=runtime_config))


def load_manifest(path: str | os.PathLike[str]) -> AdapterManifest:
    p = Path(path)
    data = load_yaml(read_text_file(p, f"{p}: manifest"), where=str(p))
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: manifest must be a mapping")
    try:
        manifest = AdapterManifest.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, where=str(p), model=AdapterManifest) from None
    if manifest.id != p.stem and p.suffix in (".yaml", ".yml"):
        raise ConfigError(f"{p}: manifest id {manifest.id!r} does not match the file name {p.stem!r}")
    if manifest.config and manifest.config.runtime_config and manifest.runtime == RUNTIME:
        validate_config(manifest.config.runtime_config, where=f"{p}: config.runtime_config")
    return manifest


def manifest_document(manifest: AdapterManifest) -> dict[str, Any]:
    return manifest.model_dump(mode="python", exclude_none=True)


def save_manifest(manifest: AdapterManifest, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    p = Path(path)
    if p.exists() and not force:
        raise ConfigError(f"{p}: already exists (use --force to overwrite)")
    return write_atomic(p, dump_yaml(manifest_document(manifest), block_strings=False), what="manifest")


def schema_documents() -> dict[str, dict[str, Any]]:
    models: dict[str, type[StrictModel]] = {"hermes-proxy-runtime-config": HermesProxyRuntimeConfig,
                                            "adapter-manifest": AdapterManifest}
    return {f"{name}.schema.json": {**model.model_json_schema(mode="validation"),
                                    "$id": f"https://hermes-nb.invalid/schema/{name}.schema.json"}
            for name, model in models.items()}


def write_schemas(directory: str | os.PathLike[str]) -> list[Path]:
    return [write_atomic(Path(directory) / name, json.dumps(doc, indent=2, sort_keys=True) + "\n", what="schema")
            for name, doc in schema_documents().items()]
