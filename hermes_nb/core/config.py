"""The strict ``runtime_config`` of the hermes-proxy adapter, its validation and merging; an unknown key is named
with the closest valid one. Its sources are layered by :func:`hermes_nb.core.resolve.resolve_runtime_config`."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field, PrivateAttr, SecretStr, ValidationError, field_serializer, field_validator

from hermes_nb.core.errors import ConfigError, UnknownKeyError
from hermes_nb.core.facts import DEFAULT_AUTH_TOKEN, DEFAULT_ENDPOINT, DEFAULT_TIMEOUT_MS
from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import provider_info
from hermes_nb.core.redaction import REDACTED, is_secret_name, redact_headers

Provider = Literal["nous", "xai"]
UH_STRICT_KEYS = ("endpoint", "model", "provider", "request_timeout_ms", "extra_headers")
#: headers ``extra_headers`` may not set: the client frames the request, the bearer is ``auth_token``
FORBIDDEN_EXTRA_HEADERS = ("content-length", "host", "transfer-encoding", "authorization")
#: the same as a JSON Schema pattern (case-insensitive by character classes: JSON Schema has no regex flags)
_FORBIDDEN_PATTERN = "^(" + "|".join(
    "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in name) for name in FORBIDDEN_EXTRA_HEADERS) + ")$"


def normalise_endpoint(value: str) -> str:
    """Validate an http(s) URL by the rules of the client that sends to it; strip trailing slashes."""
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
    if url.port is not None and not 1 <= url.port <= 65535:
        raise ValueError(f"endpoint port {url.port} is out of range (1-65535): {shown!r}")
    if url.query or url.fragment:  # not echoed: a query is where API keys get pasted (?key=…)
        raise ValueError("endpoint must not carry a query or fragment (?… or #…)")
    return text.rstrip("/")


def endpoint_of(value: str, *, where: str = "endpoint") -> str:
    try:
        return normalise_endpoint(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


class HermesProxyRuntimeConfig(StrictModel):
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
        None, description="The proxy's provider, as `hermes proxy start --provider` names it: nous or xai "
                          "(their `hermes auth` ids: nous, xai-oauth). Picks the operator hints, the default "
                          "model and the wire contract; absent: detected from the proxy's /health.",
    )
    system_prompt: str | None = Field(None, description="Sent as a system message before the mission prompt.")
    temperature: float = Field(0, ge=0, le=2, description="Sampling temperature, 0–2.")
    max_tokens: int | None = Field(None, gt=0, description="Maximum completion tokens.")
    request_timeout_ms: int = Field(
        DEFAULT_TIMEOUT_MS, gt=0,
        description="The longest wait for the response to start and the longest silence in it "
                    "(not a total deadline: a stream that keeps sending may run longer).",
    )
    max_duration_ms: int | None = Field(
        None, gt=0,
        description="Optional overall cap of one request, reading the stream included (e.g. for CI); "
                    "none by default. Not part of UH's schema: left out of the UH-strict export.",
    )
    stream: bool = Field(True, description="Stream the answer over SSE.")
    extra_headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra request headers (lower-cased; they win over defaults). Not allowed: "
                    "Content-Length, Host, Transfer-Encoding (the client frames the request) and Authorization "
                    "(the bearer is auth_token).",
        json_schema_extra={"propertyNames": {"not": {"pattern": _FORBIDDEN_PATTERN}}},
    )
    #: where each key's value came from (set by resolve_runtime_config; not part of the document)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return normalise_endpoint(value)

    @field_validator("provider", mode="before")
    @classmethod
    def _provider(cls, value: Any) -> Any:
        info = provider_info(value) if isinstance(value, str) else None
        if info is not None and value.strip().lower() != info.id:
            raise ValueError(f"{value!r} is the `hermes auth` id; provider takes the proxy's name: {info.id!r} "
                             f"(`hermes proxy start --provider {info.id}`)")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must be a non-empty string")
        return value

    @field_validator("auth_token")
    @classmethod
    def _token(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value()
        if not token:
            raise ValueError("auth_token must be non-empty")
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
            if key.lower() in FORBIDDEN_EXTRA_HEADERS:
                why = ("the bearer is auth_token" if key.lower() == "authorization"
                       else "the client frames the request itself")
                raise ValueError(f"header {key!r} cannot be set in extra_headers ({why})")
            if any(c in val for c in "\r\n"):
                raise ValueError(f"header {key!r} has a line break in its value")
            if not val.isascii():  # httpx sends header values as ASCII
                raise ValueError(f"header {key!r} has a non-ASCII value")
            out[key.lower()] = val
        return out

    @field_serializer("extra_headers", when_used="json")
    def _dump_headers(self, value: dict[str, str]) -> dict[str, str]:
        return redact_headers(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            yield key, (redact_headers(value) if key == "extra_headers" else value)

    def origin(self, key: str) -> str:
        """``default``, ``manifest``, ``mission``, ``env HERMES_NB_…``, ``overrides`` or ``argument``."""
        return self._origins.get(key, "default")

    def with_endpoint(self, endpoint: str, *, origin: str) -> HermesProxyRuntimeConfig:
        copy = self.model_copy()
        copy.endpoint = endpoint
        copy._origins = {**self._origins, "endpoint": origin}
        return copy

    def secrets(self) -> list[str]:
        """Every secret value this config holds (a header's value, and its credential after the scheme)."""
        found = [self.auth_token.get_secret_value()]
        for key, val in self.extra_headers.items():
            if is_secret_name(key):
                found += [val, val.partition(" ")[2]]
        return [s for s in found if s]

    def to_parameter(self) -> dict[str, Any]:
        """This config as a notebook parameter: the document with secrets masked, and where each key came from."""
        return {**self.to_document(), "origins": dict(self._origins)}

    @classmethod
    def from_parameter(cls, value: Mapping[str, Any], auth_token: str | None = None) -> HermesProxyRuntimeConfig:
        """A :meth:`to_parameter` config made whole with ``auth_token`` (never a parameter); masked values dropped."""
        doc = {k: v for k, v in value.items() if k not in ("origins", "auth_token")}
        doc["extra_headers"] = {k: v for k, v in doc.get("extra_headers", {}).items() if REDACTED not in v}
        if auth_token:
            doc["auth_token"] = auth_token
        config = validate_config(doc, where="config")
        config._origins = dict(value.get("origins") or {})
        return config

    def to_document(self, *, reveal_secrets: bool = False, uh_strict: bool = False) -> dict[str, Any]:
        data = self.model_dump(mode="python", exclude_none=True)
        data["auth_token"] = self.auth_token.get_secret_value() if reveal_secrets else "**********"
        if not reveal_secrets:
            data["extra_headers"] = redact_headers(data["extra_headers"])
        return {k: v for k, v in data.items() if k in UH_STRICT_KEYS} if uh_strict else data


def _model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    for part in loc:
        field = model.model_fields.get(str(part)) if model is not None else None
        if field is None:
            return None
        kinds = (field.annotation, *getattr(field.annotation, "__args__", ()))
        model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
    return model


def format_validation_error(exc: ValidationError, *, where: str, model: type[BaseModel] | None = None) -> ConfigError:
    problems: list[str] = []
    first_unknown: UnknownKeyError | None = None
    for err in exc.errors(include_url=False, include_input=False):
        loc = tuple(err.get("loc", ()))
        path = ".".join(str(p) for p in loc) or "(document)"
        if err.get("type") == "extra_forbidden":
            key = str(loc[-1]) if loc else "?"
            parent = _model_at(model, loc[:-1])
            close = difflib.get_close_matches(key, list(parent.model_fields), n=1, cutoff=0.5) if parent else []
            unknown = UnknownKeyError(key, where=".".join([where, *map(str, loc[:-1])]),
                                      suggestion=close[0] if close else None)
            first_unknown = first_unknown or unknown
            problems.append(str(unknown))
        elif err.get("type") == "missing":
            problems.append(f"{where}: missing required key {path!r}")
        else:
            problems.append(f"{where}: {path}: {err.get('msg', 'invalid value').removeprefix('Value error, ')}")
    if first_unknown is not None and len(problems) == 1:
        return first_unknown
    message = problems[0] if len(problems) == 1 else f"{len(problems)} problems: " + "; ".join(problems)
    return ConfigError(message, problems=problems)


def validate_config(data: Mapping[str, Any], *, where: str = "runtime_config") -> HermesProxyRuntimeConfig:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return HermesProxyRuntimeConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise format_validation_error(exc, where=where, model=HermesProxyRuntimeConfig) from None


def merge_runtime_config(base: Mapping[str, Any] | HermesProxyRuntimeConfig, *overrides: Mapping[str, Any] | None,
                         where: str = "runtime_config") -> HermesProxyRuntimeConfig:
    """Shallow merge of ``overrides`` over ``base`` (later wins), then strict re-validation."""
    merged = base.model_dump(exclude_none=True) if isinstance(base, HermesProxyRuntimeConfig) else dict(base)
    for layer in (layer for layer in overrides if layer is not None):
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
