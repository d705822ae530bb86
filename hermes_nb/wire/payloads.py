"""OpenAI-style payloads: request body, chunk interpretation, Retry-After (error envelopes: ``envelopes``,
re-exported here).

Pure: no IO. The client feeds bytes/events in; these functions say what they mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from hermes_nb.core.records import ErrorEnvelope
from hermes_nb.wire.envelopes import envelope_from_json, excerpt, in_band_error_of, media_type, parse_error_body
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
    "responses_request_body",
    "ChatStream",
    "parse_chat_completion",
    "in_band_error_of",
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


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and not isinstance(headers, httpx.Headers):  # httpx.Headers.get ignores case already
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
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
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


#: a Responses API ``status`` / ``incomplete_details.reason`` → the chat finish_reason it means
_RESPONSE_FINISH = {"completed": "stop", "max_output_tokens": "length", "content_filter": "content_filter"}


def _response_finish(response: Mapping[str, Any]) -> str | None:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return _RESPONSE_FINISH.get(str(reason), str(reason or "incomplete"))
    return _RESPONSE_FINISH.get(status) if isinstance(status, str) else None


def _response_text(response: Mapping[str, Any]) -> str:
    """The ``output_text`` parts of a Responses API ``response`` object, joined."""
    parts: list[str] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else ():
        content = item.get("content") if isinstance(item, Mapping) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
    return "".join(parts)


def responses_request_body(config: HermesProxyRuntimeConfig, prompt: str | list[dict[str, Any]], *,
                           stream: bool | None = None) -> dict[str, Any]:
    """The ``/responses`` body (OpenAI's Responses API) for ``prompt`` (the ``input``: text or items);
    ``config.system_prompt`` becomes ``instructions``, ``max_tokens`` ``max_output_tokens``."""
    streaming = config.stream if stream is None else stream
    body: dict[str, Any] = {"model": config.model, "input": prompt, "stream": streaming}
    if config.system_prompt:
        body["instructions"] = config.system_prompt
    body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_output_tokens"] = config.max_tokens
    return body


def parse_chat_completion(obj: Any) -> tuple[str, str | None, dict[str, Any] | None, str | None]:
    """``(text, finish_reason, usage, model)`` of a non-streamed ``chat.completion`` body (or a Responses API
    ``response`` object: its ``output_text``, ``completed`` → ``stop``, ``max_output_tokens`` → ``length``)."""
    if not isinstance(obj, Mapping):
        return "", None, None, None
    if obj.get("object") == "response":
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
        model = obj.get("model") if isinstance(obj.get("model"), str) else None
        return _response_text(obj), _response_finish(obj), usage, model
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


class ChatStream:
    """Interprets the SSE events of one chat-completions stream (or of a Responses API stream).

    :meth:`feed` returns the content delta of an event ("" if none). After
    ``data: [DONE]`` (``done``) or an error (``error``) the stream is
    ``finished`` and the caller stops reading; later events are ignored.
    An error in any shape (:func:`in_band_error_of`, or an ``event: error``
    frame) ends the stream with the text so far kept. Empty data, keep-alives
    and JSON that is not a chunk are skipped; a frame that is not JSON is
    recorded in ``protocol_errors`` (never raised). A whole ``choices[].message``
    after deltas is appended when it brings new text, else noted in ``warnings``.

    Responses API frames (``{"type": "response.…"}``): ``response.output_text.delta`` carries the text;
    ``response.completed`` / ``response.incomplete`` end the stream (there is no ``[DONE]``: ``done``
    stays False, ``finish_reason`` says ``stop`` / ``length``); ``response.failed`` (and ``error``) is an
    in-band error.
    """

    __slots__ = (
        "_parts", "_text", "_over", "done", "finish_reason", "usage", "model", "error", "in_band_error",
        "protocol_errors", "chunks", "skipped", "warnings", "reasoning",
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
        #: things worth telling that are not errors (e.g. a whole message after deltas)
        self.warnings: list[str] = []
        #: deltas that carried reasoning (``reasoning_content`` or ``reasoning``) rather than answer text
        self.reasoning = 0

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
                self.protocol_errors.append(f"invalid JSON in SSE data: {excerpt(data)}")
                return ""
            if obj.__class__ is not dict:
                self.skipped += 1
                return ""
        return self.feed_chunk(obj)

    def feed_chunk(self, obj: dict[str, Any]) -> str:
        """Interpret one parsed chunk object (``feed`` after ``json.loads``)."""
        kind = obj.get("type")
        if kind.__class__ is str and kind.startswith("response."):
            return self._response_event(kind, obj)
        choices = obj.get("choices")
        if choices is None or obj.get("error"):
            error = in_band_error_of(obj)
            if error is not None:
                self.error = error
                self.in_band_error = self._over = True
                return ""
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
        holder = choice.get("delta")
        if holder.__class__ is not dict:
            message = choice.get("message")
            if message.__class__ is dict and self._parts:
                return self._late_message(message, choice)
            holder = message
        if holder.__class__ is dict:
            content = holder.get("content")
            if content and content.__class__ is str:
                piece = content
                self._parts.append(content)
                self._text = None
            else:
                thought = holder.get("reasoning_content") or holder.get("reasoning")
                if thought and thought.__class__ is str:
                    self.reasoning += 1
        finish = choice.get("finish_reason")
        if finish and finish.__class__ is str:
            self.finish_reason = finish
        return piece

    def _response_event(self, kind: str, obj: dict[str, Any]) -> str:
        """One Responses API frame."""
        self.chunks += 1
        if kind == "response.output_text.delta":
            piece = obj.get("delta")
            if piece and piece.__class__ is str:
                self._parts.append(piece)
                self._text = None
                return piece
            return ""
        if kind == "response.output_text.done" and not self._parts:
            text = obj.get("text")
            if text and text.__class__ is str:  # a stream that sent the text whole, no deltas
                self._parts.append(text)
                self._text = None
                return text
            return ""
        response = obj.get("response")
        response = response if response.__class__ is dict else {}
        model = response.get("model")
        if model and model.__class__ is str:
            self.model = model
        usage = response.get("usage")
        if usage and usage.__class__ is dict:
            self.usage = usage
        if kind == "response.failed":
            error = response.get("error")
            self.error = (envelope_from_json({"error": error}) if error.__class__ is dict else None) or \
                ErrorEnvelope(message="response.failed without an error object", shape="string")
            self.in_band_error = self._over = True
        elif kind in ("response.completed", "response.incomplete"):
            self.finish_reason = _response_finish(response) or ("stop" if kind == "response.completed" else None)
            self._over = True
        return ""

    def _late_message(self, message: dict[str, Any], choice: dict[str, Any]) -> str:
        """A whole ``choices[].message`` after deltas: append what is new, note what is not."""
        finish = choice.get("finish_reason")
        if finish and finish.__class__ is str:
            self.finish_reason = finish
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
        self._parts.append(piece)
        self._text = None
        return piece

    def _in_band(self, data: str) -> None:
        self.in_band_error = self._over = True
        envelope = None
        if data.strip():
            try:
                obj = _loads(data)
            except (ValueError, RecursionError):  # too deep is invalid too
                obj = None
            if isinstance(obj, dict):
                envelope = in_band_error_of(obj) or envelope_from_json(obj)
        if envelope is None:
            envelope = ErrorEnvelope(message=data.strip() or "error event in stream", shape="string")
        self.error = envelope
