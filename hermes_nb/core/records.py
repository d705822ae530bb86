"""Plain data records: no IO, never a secret (headers are redacted when a record is built), JSON-safe dumps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from hermes_nb.core.errors import ProtocolViolation, ProxyStatusError, ProxyTimeout, ProxyUnreachable
from hermes_nb.core.model import Shown, StrictModel
from hermes_nb.core.redaction import Redactor

Status = Literal["passed", "failed", "blocked"]
#: where a transport failure happened: ``connect`` (no response), ``headers`` (no status yet) or ``body``
TransportPhase = Literal["connect", "headers", "body"]
#: what went wrong below HTTP; ``deadline``: the overall cap passed, ``read_timeout``: a silence too long
TransportKind = Literal["connect_refused", "connect_timeout", "dns", "connect_error", "read_timeout", "deadline",
                        "read_error", "reset", "remote_protocol", "other"]


class ErrorEnvelope(StrictModel):
    """An error body: ``{"error": {...}}`` (nested), ``{"message": ...}`` (flat), ``{"error": "..."}`` (string)."""

    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    param: str | None = None
    status: str | int | None = None
    shape: Literal["nested", "flat", "string"] = "nested"

    @property
    def code_str(self) -> str | None:
        return None if self.code is None else str(self.code)

    @property
    def codes(self) -> frozenset[str]:
        """``type`` and ``code``, stripped and lower-cased (blank ones left out): THE form every classifier compares."""
        return frozenset(text for v in (self.type, self.code) if v is not None and (text := str(v).strip().lower()))


class SSEEventRecord(StrictModel):
    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
    #: seconds since the request was sent
    t: float = 0.0


class RequestRecord(StrictModel):
    method: str
    url: str
    #: lower-cased names; ``authorization`` redacted
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None


class TransportFailure(StrictModel):
    kind: TransportKind
    phase: TransportPhase
    message: str
    exception: str | None = None


#: how many delta arrival times an Exchange keeps in ``Timings.delta_s`` (its timeline picture needs no more)
DELTA_MARKS = 1000


class Timings(StrictModel):
    """Seconds since the request was sent."""

    started_at: datetime
    headers_s: float | None = None
    first_delta_s: float | None = None
    last_byte_s: float | None = None
    total_s: float = 0.0
    delta_s: list[float] = Field(default_factory=list)


class Exchange(Shown, StrictModel):
    """One HTTP exchange with the proxy, success or not, as recorded (never raised)."""

    request: RequestRecord
    status: int | None = None
    reason: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    content_type: str | None = None  # the media type only, lower-cased
    #: a body that was not SSE, verbatim (UTF-8 with replacement), and its JSON when it was JSON
    body_text: str | None = None
    json_body: Any = None
    streamed: bool = False
    events: list[SSEEventRecord] = Field(default_factory=list)
    text: str = ""
    finish_reason: str | None = None
    #: ``data: [DONE]`` was seen
    done: bool = False
    usage: dict[str, Any] | None = None
    model: str | None = None
    envelope: ErrorEnvelope | None = None
    #: the error arrived inside a 200 stream
    in_band_error: bool = False
    protocol_errors: list[str] = Field(default_factory=list)
    #: stream oddities that are not errors (a whole ``choices[].message`` after the deltas)
    warnings: list[str] = Field(default_factory=list)
    transport_error: TransportFailure | None = None
    retry_after_s: float | None = None
    timings: Timings

    @property
    def ok_status(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def server(self) -> str | None:
        return self.headers.get("server")

    def raise_for_status(self) -> Exchange:
        """This exchange if it got a whole 2xx answer, else the error a caller that requires one wants."""
        where = f"{self.request.method} {self.request.url}"
        failure = self.transport_error
        env = self.envelope
        detail = (env.message or env.type or env.code_str or "") if env is not None else (self.body_text or "")[:200]
        if failure is not None and failure.kind in ("connect_refused", "dns", "connect_error"):
            raise ProxyUnreachable(f"{where}: {failure.message}")
        if failure is not None and failure.kind in ("connect_timeout", "read_timeout", "deadline"):
            raise ProxyTimeout(f"{where}: {failure.message}")
        if self.status is not None and not self.ok_status:
            raise ProxyStatusError(f"{where}: HTTP {self.status} {detail}".rstrip(), status=self.status,
                                   body=self.body_text or "")
        if self.in_band_error:
            status = int(code) if env is not None and (code := str(env.status)).isdigit() else self.status or 200
            raise ProxyStatusError(f"{where}: error inside the {self.status} stream: {detail}".rstrip(),
                                   status=status, body=env.model_dump_json() if env is not None else "")
        if failure is not None or self.protocol_errors:
            problem = failure.message if failure is not None else self.protocol_errors[0]
            raise ProtocolViolation(f"{where}: {problem}")
        return self

    def _repr_text_(self) -> str:
        """``Exchange(POST …/chat/completions → 200 OK, streamed, 12 events, 0.412 s, 57 chars)``."""
        req = self.request
        failure = f"no response ({self.transport_error.kind})" if self.transport_error else "no response"
        bits = [f"{self.status} {self.reason or ''}".strip() if self.status is not None else failure]
        bits += [f"streamed, {len(self.events)} events"] if self.streamed else []
        bits.append(f"{self.timings.total_s:.3f} s")
        bits += [f"{len(self.text)} chars"] if self.text else []
        env = self.envelope
        bits += [f"error {env.type or env.code}"] if env is not None and (env.type or env.code is not None) else []
        return Redactor().text(f"Exchange({req.method} {req.url} → {', '.join(bits)})")


class Outcome(StrictModel):
    """The classification of one exchange; ``reason``: ``ok``, ``auth``, ``rate_limited``, ``truncated``…"""

    status: Status
    reason: str
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    hint: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    retry_after_s: float | None = None
    #: the sentinel block's text, or None when absent
    final_message: str | None = None




def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return int(value) if (number := _num(value)) is not None and number >= 0 else None


@dataclass(frozen=True)
class Usage:
    """Token usage of one answer ("not reported", never guessed); speed over first delta to last byte (or, under
    50 ms, over the whole exchange)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    #: ``stream``, ``response`` (non-streamed body), ``runtime``/``estimated`` (a run's result); None: not reported
    source: str | None = None
    output_s: float | None = None

    @classmethod
    def from_mapping(cls, usage: Mapping[str, Any] | None, *, source: str | None = None,
                     output_s: float | None = None) -> Usage:
        """OpenAI's ``prompt_tokens``/``completion_tokens`` or the Responses/UH ``input_tokens``/``output_tokens``."""
        if not isinstance(usage, Mapping):
            return cls()
        prompt = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
        completion = _count(usage.get("completion_tokens", usage.get("output_tokens")))
        total = _count(usage.get("total_tokens"))
        if total is None and prompt is not None and completion is not None:
            total = prompt + completion
        if prompt is None and completion is None and total is None:
            return cls()
        return cls(prompt, completion, total, source or str(usage.get("source") or "response"), output_s)

    @classmethod
    def from_exchange(cls, exchange: Any) -> Usage:
        if exchange is None:
            return cls()
        t = exchange.timings
        output_s = cls.output_seconds(t.first_delta_s if exchange.streamed else None, t.last_byte_s, t.total_s)
        return cls.from_mapping(exchange.usage, source="stream" if exchange.streamed else "response",
                                output_s=output_s)

    @staticmethod
    def output_seconds(first_delta_s: float | None, last_byte_s: float | None, total_s: float | None) -> float | None:
        if first_delta_s is not None and last_byte_s is not None and last_byte_s - first_delta_s >= 0.05:
            return last_byte_s - first_delta_s
        return total_s

    @property
    def reported(self) -> bool:
        return self.source is not None

    @property
    def tokens_per_s(self) -> float | None:
        if self.completion_tokens is None or not self.output_s or self.output_s <= 0:
            return None
        return self.completion_tokens / self.output_s

    def line(self) -> str:
        """``12 prompt + 34 completion = 46 tokens · 85.2 tokens/s`` (or ``not reported``)."""
        if not self.reported:
            return "not reported"
        n = ["?" if v is None else str(v) for v in (self.prompt_tokens, self.completion_tokens, self.total_tokens)]
        text = f"{n[0]} prompt + {n[1]} completion = {n[2]} tokens"
        if (speed := self.tokens_per_s) is not None:
            text += f" · {speed:.1f} tokens/s"
        if self.source == "estimated":
            text += " (estimated)"
        return text


def _is_delta(data: str) -> bool:
    try:
        obj = json.loads(data) if data[:1] == "{" else None
    except ValueError:
        return False
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta")
    return bool(isinstance(delta, dict) and delta.get("content") or choices[0].get("text"))


@dataclass(frozen=True)
class StreamTimeline:
    """The timing marks of one streamed answer, seconds since the request was sent (None: did not happen)."""

    headers_s: float | None = None
    first_delta_s: float | None = None
    deltas: tuple[float, ...] = field(default_factory=tuple)
    last_byte_s: float | None = None
    total_s: float = 0.0
    #: the stream was stopped by its reader (the console's Stop)
    stopped: bool = False

    @classmethod
    def from_exchange(cls, exchange: Any, *, stopped: bool = False) -> StreamTimeline:
        t = exchange.timings
        deltas = tuple(round(e.t, 4) for e in exchange.events if _is_delta(e.data))
        if not deltas:  # a run's Exchange keeps no event records, only the delta times
            deltas = tuple(round(x, 4) for x in getattr(t, "delta_s", ()) or ())
        first = t.first_delta_s if t.first_delta_s is not None else (deltas[0] if deltas else None)
        return cls(t.headers_s, first, deltas, t.last_byte_s, t.total_s, stopped)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamTimeline:
        deltas = tuple(v for v in map(_num, data.get("deltas") or ()) if v is not None)
        return cls(_num(data.get("headers_s")), _num(data.get("first_delta_s")), deltas,
                   _num(data.get("last_byte_s")), _num(data.get("total_s")) or 0.0, bool(data.get("stopped")))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "deltas": list(self.deltas)}
