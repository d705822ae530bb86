"""OpenAI-style payloads, pure: request bodies, Retry-After, chunk interpretation, error envelopes in every shape."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.records import ErrorEnvelope
from hermes_nb.wire.sse import ServerSentEvent

#: a Responses API ``status`` / ``incomplete_details.reason`` -> the chat finish_reason it means
_RESPONSE_FINISH = {"completed": "stop", "max_output_tokens": "length", "content_filter": "content_filter"}


def media_type(content_type: str | None) -> str | None:
    """``"Text/Event-Stream; charset=utf-8"`` -> ``"text/event-stream"``; None when absent."""
    return (content_type or "").split(";", 1)[0].strip().lower() or None


def _opt_str(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def _code(value: Any) -> str | int | None:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if value is None or isinstance(value, (str, int)) else _opt_str(value)


def _status(obj: Mapping[str, Any]) -> Any:
    return obj.get("status") if obj.get("status") is not None else obj.get("status_code")


def envelope_from_json(obj: Any) -> ErrorEnvelope | None:
    """The error envelope in parsed JSON, or None when it holds none."""
    if not isinstance(obj, Mapping):
        return None
    err = obj.get("error")
    if isinstance(err, Mapping):
        return ErrorEnvelope(message=_opt_str(err.get("message")), type=_opt_str(err.get("type")),
                             code=_code(err.get("code")), param=_opt_str(err.get("param")),
                             status=_code(err.get("status") if err.get("status") is not None else _status(obj)))
    if isinstance(err, str) and err:
        return ErrorEnvelope(message=err, shape="string")
    if "message" in obj and "choices" not in obj:
        return ErrorEnvelope(message=_opt_str(obj.get("message")), type=_opt_str(obj.get("type")),
                             code=_code(obj.get("code")), status=_code(obj.get("status")), shape="flat")
    return None


def parse_error_body(body: str | bytes | None, content_type: str | None) -> ErrorEnvelope | None:
    """The error envelope of a response body; None for a body that is not JSON (kept verbatim by the caller)."""
    text = (body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body or "").strip()
    ctype = media_type(content_type) or ""
    if not text or not (ctype.endswith("/json") or ctype.endswith("+json") or text[0] in "{["):
        return None
    try:
        return envelope_from_json(json.loads(text))
    except (ValueError, RecursionError):  # too deep is invalid too
        return None


def in_band_error_of(obj: Mapping[str, Any]) -> ErrorEnvelope | None:
    """The error a frame of a 200 stream carries, or None for a normal chunk (one with ``choices``)."""
    if obj.get("error"):
        return envelope_from_json(obj) or ErrorEnvelope(
            message=_excerpt(json.dumps(obj["error"], ensure_ascii=False), 200), shape="string")
    if "choices" in obj:
        return None
    message, keys = obj.get("message"), ("status", "status_code", "code")
    flat = isinstance(message, str) and bool(message) and any(obj.get(k) is not None for k in keys)
    if not (obj.get("type") == "error" or obj.get("object") == "error" or flat):
        return None
    return ErrorEnvelope(message=_opt_str(message) or "error event in stream",
                         type=None if obj.get("type") == "error" else _opt_str(obj.get("type")),
                         code=_code(obj.get("code")), status=_code(_status(obj)), shape="flat")


def _excerpt(data: str, n: int = 120) -> str:
    return repr(data if len(data) <= n else data[:n] + "…")


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds, float ok) or an HTTP-date."""
    headers = {name.lower(): value for name, value in headers.items()}
    if (ms := _seconds(headers.get("retry-after-ms", ""))) is not None:
        return ms / 1000.0
    raw = headers.get("retry-after", "").strip()
    if (seconds := _seconds(raw)) is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    current = current if current.tzinfo is not None else current.replace(tzinfo=UTC)
    return max(0.0, (when - current).total_seconds())


def chat_request_body(config: HermesProxyRuntimeConfig, messages: list[dict[str, Any]], *,
                      stream: bool | None = None) -> dict[str, Any]:
    """The ``/chat/completions`` body; ``config.system_prompt`` goes first unless the messages start with it."""
    streaming = config.stream if stream is None else stream
    msgs = [dict(m) for m in messages]
    system = {"role": "system", "content": config.system_prompt}
    if config.system_prompt and not (msgs and {k: msgs[0].get(k) for k in system} == system):
        msgs.insert(0, system)
    body: dict[str, Any] = {"model": config.model, "messages": msgs, "stream": streaming}
    if streaming:
        body["stream_options"] = {"include_usage": True}
    body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    return body


def responses_request_body(config: HermesProxyRuntimeConfig, prompt: str | list[dict[str, Any]], *,
                           stream: bool | None = None) -> dict[str, Any]:
    """The ``/responses`` body (OpenAI's Responses API)."""
    body: dict[str, Any] = {"model": config.model, "input": prompt,
                            "stream": config.stream if stream is None else stream}
    if config.system_prompt:
        body["instructions"] = config.system_prompt
    body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_output_tokens"] = config.max_tokens
    return body


def _response_finish(response: Mapping[str, Any]) -> str | None:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return _RESPONSE_FINISH.get(str(reason), str(reason or "incomplete"))
    return _RESPONSE_FINISH.get(status) if isinstance(status, str) else None


def _response_text(response: Mapping[str, Any]) -> str:
    parts: list[str] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else ():
        content = item.get("content") if isinstance(item, Mapping) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "".join(parts)


def parse_chat_completion(obj: Any) -> tuple[str, str | None, dict[str, Any] | None, str | None]:
    """``(text, finish_reason, usage, model)`` of a non-streamed chat completion or Responses API ``response``."""
    if not isinstance(obj, Mapping):
        return "", None, None, None
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    if obj.get("object") == "response":
        return _response_text(obj), _response_finish(obj), usage, model
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


class ChatStream:
    """One chat-completions (or Responses API) stream: :meth:`feed` returns an event's content delta; after
    ``[DONE]``, an error or the response's end it is ``finished``. Frames that are not JSON are ``protocol_errors``."""

    __slots__ = ("_parts", "_text", "finished", "done", "finish_reason", "usage", "model", "error", "in_band_error",
                 "protocol_errors", "warnings", "reasoning")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text: str | None = ""
        self.finished = False
        self.done = False
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.error: ErrorEnvelope | None = None
        self.in_band_error = False
        self.protocol_errors: list[str] = []
        self.warnings: list[str] = []
        #: deltas that carried reasoning (``reasoning_content`` or ``reasoning``) rather than answer text
        self.reasoning = 0

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._parts)
        return self._text

    def _add(self, piece: str) -> str:
        self._parts.append(piece)
        self._text = None
        return piece

    def feed(self, event: ServerSentEvent) -> str:
        if self.finished:
            return ""
        data = event.data
        if event.event == "error":
            self._in_band(data)
            return ""
        obj: Any = None
        if data[:1] == "{":  # the common case, read by orjson (P1)
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                obj = None  # json.loads decides below (NaN, lone surrogates, deep nesting, invalid)
            else:  # orjson reads integers beyond 64 bits as floats: chunks with numbers go to json.loads
                if "usage" in obj or "error" in obj:
                    obj = None
        if obj is None:
            if not data or data.isspace():
                return ""
            if data.lstrip().startswith("[DONE]"):
                self.done = self.finished = True
                return ""
            try:
                obj = json.loads(data)
            except (ValueError, RecursionError):  # too deep is invalid too
                self.protocol_errors.append(f"invalid JSON in SSE data: {_excerpt(data)}")
                return ""
            if obj.__class__ is not dict:
                return ""
        return self.feed_chunk(obj)

    def feed_chunk(self, obj: dict[str, Any]) -> str:
        kind = obj.get("type")
        if kind.__class__ is str and kind.startswith("response."):
            return self._response_event(kind, obj)
        choices = obj.get("choices")
        if (choices is None or obj.get("error")) and (error := in_band_error_of(obj)) is not None:
            self.error = error
            self.in_band_error = self.finished = True
            return ""
        if choices is None and "usage" not in obj:
            return ""
        self._meta(obj)
        if not choices or choices.__class__ is not list or choices[0].__class__ is not dict:
            return ""
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish and finish.__class__ is str:
            self.finish_reason = finish
        holder = choice.get("delta")
        if holder.__class__ is not dict:
            holder = choice.get("message")
            if holder.__class__ is dict and self._parts:
                return self._late_message(holder)
        piece = ""
        if holder.__class__ is dict:
            content = holder.get("content")
            if content and content.__class__ is str:
                piece = self._add(content)
            elif (thought := holder.get("reasoning_content") or holder.get("reasoning")) and thought.__class__ is str:
                self.reasoning += 1
        return piece

    def _response_event(self, kind: str, obj: dict[str, Any]) -> str:
        if kind == "response.output_text.delta":
            piece = obj.get("delta")
            return self._add(piece) if piece and piece.__class__ is str else ""
        if kind == "response.output_text.done" and not self._parts:  # the text sent whole, without deltas
            text = obj.get("text")
            return self._add(text) if text and text.__class__ is str else ""
        response = obj.get("response")
        response = response if response.__class__ is dict else {}
        self._meta(response)
        if kind == "response.failed":
            error = response.get("error")
            self.error = (envelope_from_json({"error": error}) if error.__class__ is dict else None) or \
                ErrorEnvelope(message="response.failed without an error object", shape="string")
            self.in_band_error = self.finished = True
        elif kind in ("response.completed", "response.incomplete"):
            self.finish_reason = _response_finish(response) or ("stop" if kind == "response.completed" else None)
            self.finished = True
        return ""

    def _meta(self, obj: dict[str, Any]) -> None:
        model, usage = obj.get("model"), obj.get("usage")
        if model and model.__class__ is str:
            self.model = model
        if usage and usage.__class__ is dict:
            self.usage = usage

    def _late_message(self, message: dict[str, Any]) -> str:
        content = message.get("content")
        if not (content and content.__class__ is str):
            return ""
        so_far = self.text
        if content == so_far or so_far.endswith(content):
            self.warnings.append(f"a choices[].message frame after the deltas repeated {len(content)} characters "
                                 "of the streamed text; not appended")
            return ""
        piece = content[len(so_far):] if content.startswith(so_far) else content
        how = "the rest of the text it completes" if piece is not content else "its text"
        self.warnings.append(f"a choices[].message frame arrived after the deltas; {how} was appended "
                             f"({len(piece)} characters)")
        return self._add(piece)

    def _in_band(self, data: str) -> None:
        self.in_band_error = self.finished = True
        envelope = None
        try:
            obj = json.loads(data) if data.strip() else None
        except (ValueError, RecursionError):  # too deep is invalid too
            obj = None
        if isinstance(obj, dict):
            envelope = in_band_error_of(obj) or envelope_from_json(obj)
        self.error = envelope or ErrorEnvelope(message=data.strip() or "error event in stream", shape="string")
