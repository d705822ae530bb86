"""Error envelopes: every shape an error takes in a body or inside a 200 stream.

Pure: no IO. ``{"error": {...}}`` (OpenAI, the proxy, litellm), ``{"error": "text"}``, the flat
``{"message", "status"}`` and the typed ``{"type": "error", ...}`` (Anthropic-style, litellm).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hermes_nb.core.records import ErrorEnvelope

__all__ = ["media_type", "envelope_from_json", "parse_error_body", "in_band_error_of", "excerpt"]

_loads = json.loads


def media_type(content_type: str | None) -> str | None:
    """``"Text/Event-Stream; charset=utf-8"`` -> ``"text/event-stream"``; None when absent."""
    if not content_type:
        return None
    value = content_type.split(";", 1)[0].strip().lower()
    return value or None


def _is_json_type(mt: str | None) -> bool:
    return mt is not None and (mt == "application/json" or mt.endswith("+json") or mt.endswith("/json"))


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def _code(value: Any) -> str | int | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return _opt_str(value)


def envelope_from_json(obj: Any) -> ErrorEnvelope | None:
    """Read an error envelope from parsed JSON, or None when it is not one.

    Shapes: ``{"error": {message, type, code, param}}`` (``code`` int or str; also
    Anthropic's ``{"type": "error", "error": {type, message}}``), ``{"error": "text"}``
    and the flat ``{"message": ..., "status": ...}`` (litellm's and FastAPI-style
    proxies' ``{"type": "error", "message": ...}`` too).
    """
    if not isinstance(obj, Mapping):
        return None
    err = obj.get("error")
    if isinstance(err, Mapping):
        status = err.get("status")
        if status is None:
            status = obj.get("status") if obj.get("status") is not None else obj.get("status_code")
        return ErrorEnvelope(
            message=_opt_str(err.get("message")),
            type=_opt_str(err.get("type")),
            code=_code(err.get("code")),
            param=_opt_str(err.get("param")),
            status=_code(status),
            shape="nested",
        )
    if isinstance(err, str) and err:
        return ErrorEnvelope(message=err, shape="string")
    if "message" in obj and "choices" not in obj:
        return ErrorEnvelope(
            message=_opt_str(obj.get("message")),
            type=_opt_str(obj.get("type")),
            code=_code(obj.get("code")),
            status=_code(obj.get("status")),
            shape="flat",
        )
    return None


def parse_error_body(body: str | bytes | None, content_type: str | None) -> ErrorEnvelope | None:
    """The error envelope of a response body; None for non-JSON bodies (kept verbatim by the caller)."""
    if body is None:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body
    stripped = text.strip()
    if not stripped:
        return None
    if not _is_json_type(media_type(content_type)) and stripped[0] not in "{[":
        return None
    try:
        obj = _loads(stripped)
    except (ValueError, RecursionError):  # too deep is invalid too
        return None
    return envelope_from_json(obj)


def in_band_error_of(obj: Mapping[str, Any]) -> ErrorEnvelope | None:
    """The error a frame of a 200 stream carries, or None when it is a normal chunk.

    Every shape the proxy, Nous, OpenAI-compatible servers and litellm emit:
    ``{"error": {...}}`` / ``{"error": "text"}``, Anthropic-style
    ``{"type": "error", "error": {...}}``, ``{"type": "error", "message": ...}``
    and the flat ``{"status": 401, "message": "..."}`` (a frame with ``choices`` is
    never an error).
    """
    if obj.get("error"):
        return envelope_from_json(obj) or ErrorEnvelope(
            message=excerpt(json.dumps(obj["error"], ensure_ascii=False), 200), shape="string")
    if "choices" in obj:
        return None
    is_error_type = obj.get("type") == "error" or obj.get("object") == "error"
    has_message = isinstance(obj.get("message"), str) and bool(obj.get("message"))
    flat = has_message and any(obj.get(k) is not None for k in ("status", "status_code", "code"))
    if not (is_error_type or flat):
        return None
    status = obj.get("status") if obj.get("status") is not None else obj.get("status_code")
    return ErrorEnvelope(
        message=_opt_str(obj.get("message")) or "error event in stream",
        type=None if obj.get("type") == "error" else _opt_str(obj.get("type")),
        code=_code(obj.get("code")),
        status=_code(status),
        shape="flat",
    )


def excerpt(data: str, n: int = 120) -> str:
    return repr(data if len(data) <= n else data[:n] + "…")
