"""OpenAI-style payloads: request body, chunk interpretation, error envelope, Retry-After.

Pure: no IO. The client feeds bytes/events in; these functions say what they mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import orjson

from hermes_nb.core.records import ErrorEnvelope
from hermes_nb.wire.sse import ServerSentEvent

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = [
    "loads_exact",
    "media_type",
    "parse_error_body",
    "envelope_from_json",
    "parse_retry_after",
    "chat_request_body",
    "ChatStream",
    "parse_chat_completion",
]

_loads = json.loads
_fast = orjson.loads
_FastError = orjson.JSONDecodeError
#: every digit -> "0": a run of 19 zeros marks an integer literal orjson may turn into a float
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_LONG_DIGIT_RUN = b"0" * 19


def loads_exact(text: str) -> Any:
    """Exactly :func:`json.loads` on a str, faster: orjson where the two agree.

    orjson rejects what ``json.loads`` accepts beyond RFC 8259 (``NaN``,
    ``Infinity``, lone surrogates, nesting deeper than 1024) and reads integers
    outside the 64-bit range as floats. The first kind raises, and the text
    goes through ``json.loads`` itself (so errors are exactly its errors); the
    second kind needs 19 digits in a row, and any text with such a run goes
    through ``json.loads`` too. Property-tested against ``json.loads``.
    """
    if _LONG_DIGIT_RUN in text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO):
        return _loads(text)
    try:
        return _fast(text)
    except _FastError:
        return _loads(text)


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

    Shapes: ``{"error": {message, type, code, param}}`` (``code`` int or str),
    ``{"error": "text"}`` and the flat ``{"message": ..., "status": ...}``.
    """
    if not isinstance(obj, Mapping):
        return None
    err = obj.get("error")
    if isinstance(err, Mapping):
        return ErrorEnvelope(
            message=_opt_str(err.get("message")),
            type=_opt_str(err.get("type")),
            code=_code(err.get("code")),
            param=_opt_str(err.get("param")),
            status=_code(err.get("status")),
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


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        for key, val in headers.items():
            if key.lower() == name:
                return val
    return value


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds, float ok) or an HTTP-date."""
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            value = float(ms.strip())
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0
    raw = _header(headers, "retry-after")
    if raw is None or not raw.strip():
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    if current.tzinfo is None:
        current = current.replace(tzinfo=timezone.utc)
    return max(0.0, (when - current).total_seconds())


def chat_request_body(
    config: HermesProxyRuntimeConfig, messages: list[dict[str, Any]], *, stream: bool | None = None
) -> dict[str, Any]:
    """The ``/chat/completions`` body for ``messages``.

    ``config.system_prompt`` is prepended as a system message unless the
    messages already start with that exact system message.
    """
    streaming = config.stream if stream is None else stream
    msgs = [dict(m) for m in messages]
    if config.system_prompt:
        first = msgs[0] if msgs else None
        if not (first and first.get("role") == "system" and first.get("content") == config.system_prompt):
            msgs.insert(0, {"role": "system", "content": config.system_prompt})
    body: dict[str, Any] = {"model": config.model, "messages": msgs, "stream": streaming}
    if streaming:
        body["stream_options"] = {"include_usage": True}
    body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    return body


def parse_chat_completion(obj: Any) -> tuple[str, str | None, dict[str, Any] | None, str | None]:
    """``(text, finish_reason, usage, model)`` of a non-streamed ``chat.completion`` body."""
    if not isinstance(obj, Mapping):
        return "", None, None, None
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    text, finish = "", None
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        choice = choices[0]
        message = choice.get("message")
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            text = message["content"]
        elif isinstance(choice.get("text"), str):
            text = choice["text"]
        fr = choice.get("finish_reason")
        finish = fr if isinstance(fr, str) and fr else None
    return text, finish, usage, model


def _excerpt(data: str, n: int = 120) -> str:
    return repr(data if len(data) <= n else data[:n] + "…")


class ChatStream:
    """Interprets the SSE events of one chat-completions stream.

    :meth:`feed` returns the content delta of an event ("" if none). After
    ``data: [DONE]`` (``done``) or an error (``error``) the stream is
    ``finished`` and the caller stops reading; later events are ignored.
    Empty data, keep-alives and JSON that is not a chunk are skipped; a frame
    that is not JSON is recorded in ``protocol_errors`` (never raised).
    """

    __slots__ = (
        "_parts", "_text", "_over", "done", "finish_reason", "usage", "model", "error", "in_band_error",
        "protocol_errors", "chunks", "skipped",
    )

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text: str | None = ""
        self._over = False  # done or error: ignore everything else
        self.done = False
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.error: ErrorEnvelope | None = None
        self.in_band_error = False
        self.protocol_errors: list[str] = []
        #: chat.completion chunks understood / events skipped (empty, keep-alive, not a chunk)
        self.chunks = 0
        self.skipped = 0

    @property
    def finished(self) -> bool:
        return self._over

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._parts)
        return self._text

    def feed(self, event: ServerSentEvent) -> str:
        if self._over:
            return ""
        data = event.data
        if event.event == "error":
            self._in_band(data)
            return ""
        obj: Any = None
        if data[:1] == "{":  # the common case: one JSON object, read by orjson
            try:
                obj = _fast(data)
            except _FastError:
                obj = None  # json.loads decides below (NaN, lone surrogates, deep nesting, invalid)
            else:
                # orjson reads integers beyond 64 bits as floats: only usage and error
                # envelopes show numbers, so those (rare) chunks are read by json.loads
                if "usage" in obj or "error" in obj:
                    obj = None
        if obj is None:
            if not data or data.isspace():
                self.skipped += 1
                return ""
            if data.lstrip().startswith("[DONE]"):
                self.done = self._over = True
                return ""
            try:
                obj = _loads(data)
            except (ValueError, RecursionError):  # too deep is invalid too
                self.protocol_errors.append(f"invalid JSON in SSE data: {_excerpt(data)}")
                return ""
            if obj.__class__ is not dict:
                self.skipped += 1
                return ""
        return self.feed_chunk(obj)

    def feed_chunk(self, obj: dict[str, Any]) -> str:
        """Interpret one parsed chunk object (``feed`` after ``json.loads``)."""
        if "error" in obj and obj["error"]:
            self.error = envelope_from_json(obj) or ErrorEnvelope(
                message=_excerpt(json.dumps(obj["error"], ensure_ascii=False), 200), shape="string")
            self.in_band_error = self._over = True
            return ""
        choices = obj.get("choices")
        if choices is None and "usage" not in obj:
            self.skipped += 1
            return ""
        self.chunks += 1
        model = obj.get("model")
        if model is not None and model.__class__ is str and model:
            self.model = model
        usage = obj.get("usage")
        if usage is not None and usage.__class__ is dict and usage:
            self.usage = usage
        if not choices or choices.__class__ is not list:
            return ""
        choice = choices[0]
        if choice.__class__ is not dict:
            return ""
        piece = ""
        # a chunk's delta; a whole message only counts while no delta has arrived
        holder = choice.get("delta")
        if holder.__class__ is not dict and not self._parts:
            holder = choice.get("message")
        if holder.__class__ is dict:
            content = holder.get("content")
            if content and content.__class__ is str:
                piece = content
                self._parts.append(content)
                self._text = None
        finish = choice.get("finish_reason")
        if finish and finish.__class__ is str:
            self.finish_reason = finish
        return piece

    def _in_band(self, data: str) -> None:
        self.in_band_error = self._over = True
        envelope = None
        if data.strip():
            try:
                envelope = envelope_from_json(_loads(data))
            except (ValueError, RecursionError):  # too deep is invalid too
                envelope = None
        if envelope is None:
            envelope = ErrorEnvelope(message=data.strip() or "error event in stream", shape="string")
        self.error = envelope
