"""Runtime configuration, the adapter manifest, merging and schema export.

``HermesProxyRuntimeConfig`` is the strict ``runtime_config`` of the
``hermes-proxy`` adapter (seed §7 plus UH's ``provider`` and
``extra_headers``). ``AdapterManifest`` is ``uh.adapter.v0``. Both reject
unknown keys, naming the key and suggesting the closest valid one.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, Literal, Mapping

import httpx
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
)

from .errors import ConfigError, UnknownKeyError

__all__ = [
    "DEFAULT_ENDPOINT",
    "DEFAULT_AUTH_TOKEN",
    "DEFAULT_TIMEOUT_MS",
    "PROVIDERS",
    "UH_STRICT_KEYS",
    "HermesProxyRuntimeConfig",
    "AdapterConfig",
    "AdapterManifest",
    "load_manifest",
    "save_manifest",
    "manifest_template",
    "merge_runtime_config",
    "validate_config",
    "parse_overrides_json",
    "env_overrides",
    "schema_documents",
    "write_schemas",
    "format_validation_error",
]

DEFAULT_ENDPOINT = "http://127.0.0.1:8645/v1"
DEFAULT_AUTH_TOKEN = "hermes-proxy"
DEFAULT_TIMEOUT_MS = 300_000
DEFAULT_MODEL = "nousresearch/hermes-4-405b"
PROVIDERS = ("nous", "xai", "claude", "chatgpt", "supergrok")
Provider = Literal["nous", "xai", "claude", "chatgpt", "supergrok"]
#: The keys UH's own strict hermes-proxy runtime_config schema accepts.
UH_STRICT_KEYS = ("endpoint", "model", "provider", "request_timeout_ms", "extra_headers")
ENV_PREFIX = "HERMES_NB_"


def normalise_endpoint(value: str) -> str:
    """Validate an http(s) URL and strip trailing slashes (``…/v1/`` → ``…/v1``)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("endpoint must be a non-empty URL")
    text = value.strip()
    shown = text if "@" not in text else "<a URL with user info>"
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError):
        raise ValueError(f"endpoint is not a valid URL: {shown!r}") from None
    if url.userinfo:
        raise ValueError("endpoint must not carry credentials (user:password@); the proxy attaches its own")
    if url.scheme not in ("http", "https"):
        raise ValueError(f"endpoint must use http or https, got {shown!r}")
    if not url.host:
        raise ValueError(f"endpoint has no host: {shown!r}")
    if url.query or url.fragment:
        # not echoed: a query is where API keys get pasted (?key=…)
        raise ValueError("endpoint must not carry a query or fragment (?… or #…)")
    return text.rstrip("/")


class _Strict(BaseModel):
    # hide_input_in_errors: a rejected extra_headers/auth_token value must not be echoed in a ValidationError
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, hide_input_in_errors=True)


class HermesProxyRuntimeConfig(_Strict):
    """``runtime_config`` for the hermes-proxy adapter (strict)."""

    endpoint: str = Field(
        DEFAULT_ENDPOINT,
        description="Proxy endpoint including /v1; http or https; trailing slash removed.",
    )
    model: str = Field(..., min_length=1, description="Model id sent verbatim in the body.")
    auth_token: SecretStr = Field(
        SecretStr(DEFAULT_AUTH_TOKEN),
        description="Bearer value sent on every request (the real proxy ignores it). Never printed.",
    )
    provider: Provider | None = Field(
        None, description="Upstream provider, used for the `hermes auth status <provider>` hint."
    )
    system_prompt: str | None = Field(None, description="Sent as a system message before the mission prompt.")
    temperature: float = Field(0, ge=0, le=2, description="Sampling temperature, 0–2.")
    max_tokens: int | None = Field(None, gt=0, description="Maximum completion tokens.")
    request_timeout_ms: int = Field(
        DEFAULT_TIMEOUT_MS, gt=0, description="Overall deadline of one request, reading the stream included."
    )
    stream: bool = Field(True, description="Stream the answer over SSE.")
    extra_headers: dict[str, str] = Field(
        default_factory=dict, description="Extra request headers (lower-cased; they win over defaults)."
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return normalise_endpoint(value)

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must be a non-empty string")
        return value

    @field_validator("auth_token")
    @classmethod
    def _token(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value():
            raise ValueError("auth_token must be non-empty")
        token = value.get_secret_value()
        if not token.isascii() or any(c in token for c in "\r\n"):  # never echo the token itself
            raise ValueError("auth_token must be ASCII without line breaks (it is sent in the Authorization header)")
        return value

    @field_validator("extra_headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, val in value.items():
            if not key or any(c in key for c in " :\r\n\t"):
                raise ValueError(f"invalid header name {key!r}")
            if any(c in val for c in "\r\n"):
                raise ValueError(f"header {key!r} has a line break in its value")
            if not val.isascii():  # httpx sends header values as ASCII
                raise ValueError(f"header {key!r} has a non-ASCII value")
            out[key.lower()] = val
        return out

    @field_serializer("auth_token", when_used="json")
    def _dump_token(self, value: SecretStr) -> str:
        return "**********"

    @field_serializer("extra_headers", when_used="json")
    def _dump_headers(self, value: dict[str, str]) -> dict[str, str]:
        from .redact import redact_headers

        return redact_headers(value)

    def __repr_args__(self):  # type: ignore[override]
        from .redact import redact_headers

        for key, value in super().__repr_args__():
            yield key, (redact_headers(value) if key == "extra_headers" else value)

    def secrets(self) -> list[str]:
        """Every secret value this config holds (for redaction)."""
        found = [self.auth_token.get_secret_value()]
        for key, val in self.extra_headers.items():
            if key in ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"):
                found.append(val)
                if " " in val:
                    found.append(val.split(" ", 1)[1])
        return [s for s in found if s]

    def to_document(self, *, reveal_secrets: bool = False, uh_strict: bool = False) -> dict[str, Any]:
        """A plain dict for YAML/JSON; the token is masked unless ``reveal_secrets``."""
        data = self.model_dump(mode="python", exclude_none=True)
        data["auth_token"] = self.auth_token.get_secret_value() if reveal_secrets else "**********"
        if not reveal_secrets:
            from .redact import redact_headers

            data["extra_headers"] = redact_headers(data.get("extra_headers", {}))
        if uh_strict:
            data = {k: v for k, v in data.items() if k in UH_STRICT_KEYS}
        return data


class AdapterConfig(_Strict):
    cli_command: str | None = None
    default_toolsets: list[str] = Field(default_factory=list)
    default_provider: str = ""
    default_model: str = ""
    worktree_mode: bool = False
    pass_session_id: bool = True
    runtime_config: dict[str, Any] = Field(default_factory=dict)


class AdapterManifest(_Strict):
    """``uh.adapter.v0`` manifest (``.harness/adapters/<id>.yaml``)."""

    schema_version: Literal["uh.adapter.v0"] | None = None
    id: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    name: str = Field(..., min_length=1)
    runtime: str = Field(..., min_length=1)
    description: str = ""
    capabilities: list[str] = Field(default_factory=list)
    status: Literal["active", "experimental", "deprecated"] = "active"
    config: AdapterConfig | None = None

    def runtime_config(self, *overrides: Mapping[str, Any]) -> HermesProxyRuntimeConfig:
        base = dict(self.config.runtime_config) if self.config else {}
        return merge_runtime_config(base, *overrides)


# --------------------------------------------------------------------------- errors

def _closest(key: str, valid: list[str]) -> str | None:
    match = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    return match[0] if match else None


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    current: Any = model
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        args = getattr(ann, "__args__", ())
        nested = [a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        current = nested[0] if nested else None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def format_validation_error(exc: ValidationError, *, where: str, model: type[BaseModel] | None = None) -> ConfigError:
    """Turn a pydantic error into a :class:`ConfigError` with one line per problem."""
    problems: list[str] = []
    first_unknown: UnknownKeyError | None = None
    for err in exc.errors(include_url=False, include_input=False):
        loc = tuple(err.get("loc", ()))
        path = ".".join(str(p) for p in loc) or "(document)"
        if err.get("type") == "extra_forbidden":
            key = str(loc[-1]) if loc else "?"
            parent = _model_at(model, loc[:-1]) if model else None
            suggestion = _closest(key, list(parent.model_fields)) if parent else None
            unknown = UnknownKeyError(key, where=where + (f".{'.'.join(map(str, loc[:-1]))}" if loc[:-1] else ""),
                                      suggestion=suggestion)
            first_unknown = first_unknown or unknown
            problems.append(str(unknown))
        elif err.get("type") == "missing":
            problems.append(f"{where}: missing required key {path!r}")
        else:
            msg = err.get("msg", "invalid value")
            msg = msg.removeprefix("Value error, ")
            problems.append(f"{where}: {path}: {msg}")
    if first_unknown is not None and len(problems) == 1:
        return first_unknown
    message = problems[0] if len(problems) == 1 else f"{len(problems)} problems: " + "; ".join(problems)
    error = ConfigError(message, problems=problems)
    return error


def validate_config(data: Mapping[str, Any], *, where: str = "runtime_config") -> HermesProxyRuntimeConfig:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return HermesProxyRuntimeConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise format_validation_error(exc, where=where, model=HermesProxyRuntimeConfig) from None


def merge_runtime_config(base: Mapping[str, Any] | HermesProxyRuntimeConfig, *overrides: Mapping[str, Any] | None,
                         where: str = "runtime_config") -> HermesProxyRuntimeConfig:
    """Shallow merge: manifest < mission overrides < CLI overrides, then strict re-validation."""
    if isinstance(base, HermesProxyRuntimeConfig):
        merged: dict[str, Any] = base.model_dump(mode="python", exclude_none=True)
    elif isinstance(base, Mapping):
        merged = dict(base)
    else:
        raise ConfigError(f"{where}: expected a mapping, got {type(base).__name__}")
    for layer in overrides:
        if layer is None:
            continue
        if not isinstance(layer, Mapping):
            raise ConfigError(f"{where}: overrides must be an object, got {type(layer).__name__}")
        merged.update(layer)
    return validate_config(merged, where=where)


def parse_overrides_json(text: str, *, where: str = "--runtime-config-overrides") -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a JSON object, got {type(value).__name__}")
    return value


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Overrides from ``HERMES_NB_ENDPOINT``, ``HERMES_NB_MODEL`` and ``HERMES_NB_AUTH_TOKEN``."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key in ("endpoint", "model", "auth_token", "provider"):
        value = env.get(ENV_PREFIX + key.upper())
        if value:
            out[key] = value
    return out


# --------------------------------------------------------------------------- manifest IO

def manifest_template(*, uh_strict: bool = False, endpoint: str = DEFAULT_ENDPOINT,
                      model: str = DEFAULT_MODEL) -> AdapterManifest:
    """The seed §9 manifest (status experimental) for ``adapter add``."""
    runtime_config: dict[str, Any] = {
        "endpoint": endpoint,
        "model": model,
        "provider": "nous",
        "request_timeout_ms": DEFAULT_TIMEOUT_MS,
        "extra_headers": {},
    }
    if not uh_strict:
        runtime_config.update({"auth_token": DEFAULT_AUTH_TOKEN, "temperature": 0, "stream": True})
    validate_config(runtime_config)
    return AdapterManifest(
        id="hermes-proxy",
        name="Hermes proxy",
        runtime="hermes-proxy",
        status="experimental",
        description=(
            "HTTP client targeting a local `hermes proxy` instance.\n"
            "Provider-agnostic OAI-compat routing for OAuth-backed subscriptions.\n"
        ),
        capabilities=["subscription-auth", "oai-compat", "http-transport", "sentinel-protocol"],
        config=AdapterConfig(pass_session_id=False, runtime_config=runtime_config),
    )


def load_manifest(path: str | os.PathLike[str]) -> AdapterManifest:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: manifest not found") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read manifest: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}: invalid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: manifest must be a mapping")
    try:
        manifest = AdapterManifest.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, where=str(p), model=AdapterManifest) from None
    if manifest.id != p.stem and p.suffix in (".yaml", ".yml"):
        raise ConfigError(f"{p}: manifest id {manifest.id!r} does not match the file name {p.stem!r}")
    if manifest.config and manifest.config.runtime_config and manifest.runtime == "hermes-proxy":
        validate_config(manifest.config.runtime_config, where=f"{p}: config.runtime_config")
    return manifest


def manifest_document(manifest: AdapterManifest) -> dict[str, Any]:
    return manifest.model_dump(mode="python", exclude_none=True)


def save_manifest(manifest: AdapterManifest, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    p = Path(path)
    if p.exists() and not force:
        raise ConfigError(f"{p}: already exists (use --force to overwrite)")
    p.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(manifest_document(manifest), sort_keys=False, allow_unicode=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)
    return p


# --------------------------------------------------------------------------- schema export

def schema_documents() -> dict[str, dict[str, Any]]:
    """JSON Schemas keyed by file name (``docs/schema/<name>``)."""
    runtime = HermesProxyRuntimeConfig.model_json_schema(mode="validation")
    runtime["$id"] = "https://hermes-nb.invalid/schema/hermes-proxy-runtime-config.schema.json"
    manifest = AdapterManifest.model_json_schema(mode="validation")
    manifest["$id"] = "https://hermes-nb.invalid/schema/adapter-manifest.schema.json"
    return {
        "hermes-proxy-runtime-config.schema.json": runtime,
        "adapter-manifest.schema.json": manifest,
    }


def write_schemas(directory: str | os.PathLike[str]) -> list[Path]:
    out = []
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name, doc in schema_documents().items():
        p = d / name
        p.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        out.append(p)
    return out
