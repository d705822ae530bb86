"""Plain data records shared by the client, classifier, runner, probe and receipts.

No IO and no logic beyond small derived properties. Every record dumps to
JSON-safe data with :meth:`pydantic.BaseModel.model_dump` (``mode="json"``)
and never holds a secret: request headers are redacted when the record is
built (see :func:`hermes_nb.core.redaction.redact_headers`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from hermes_nb.core.model import Shown, StrictModel
from hermes_nb.core.redaction import Redactor

__all__ = [
    "DELTA_MARKS",
    "ErrorEnvelope",
    "SSEEventRecord",
    "RequestRecord",
    "TransportFailure",
    "TransportKind",
    "TransportPhase",
    "NO_CONNECTION",
    "TIMED_OUT",
    "Timings",
    "Exchange",
    "Outcome",
    "Status",
]

Status = Literal["passed", "failed", "blocked"]
#: where a transport failure happened: ``connect`` (no response), ``headers`` (connected, no status yet) or
#: ``body`` (mid-stream)
TransportPhase = Literal["connect", "headers", "body"]

#: What went wrong below HTTP. ``deadline`` = the overall request deadline
#: fired; ``read_timeout`` = no byte for the idle-read timeout (a stall).
TransportKind = Literal[
    "connect_refused",
    "connect_timeout",
    "dns",
    "connect_error",
    "read_timeout",
    "deadline",
    "read_error",
    "reset",
    "remote_protocol",
    "other",
]


class ErrorEnvelope(StrictModel):
    """``{"error": {message, type, code}}`` or the flat ``{message, status}`` shape."""

    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    param: str | None = None
    status: str | int | None = None
    #: ``"nested"`` for ``{"error": {...}}``, ``"flat"`` for ``{"message": ...}``,
    #: ``"string"`` for ``{"error": "..."}``.
    shape: Literal["nested", "flat", "string"] = "nested"

    @property
    def code_str(self) -> str | None:
        return None if self.code is None else str(self.code)

    @property
    def codes(self) -> frozenset[str]:
        """``type`` and ``code``, stripped and lower-cased (blank ones left out): THE form every classifier compares."""
        return frozenset(text for v in (self.type, self.code) if v is not None and (text := str(v).strip().lower()))


class SSEEventRecord(StrictModel):
    """One dispatched SSE event as received."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
    #: seconds since the request was sent
    t: float = 0.0


class RequestRecord(StrictModel):
    method: str
    url: str
    #: lower-cased names; ``authorization`` is redacted (``Bearer <redacted>``)
    headers: dict[str, str] = Field(default_factory=dict)
    #: the JSON body sent, if any
    body: Any = None


class TransportFailure(StrictModel):
    kind: TransportKind
    phase: TransportPhase
    message: str
    exception: str | None = None


#: the transport failures that mean "no proxy there", and those that mean "it took too long"
NO_CONNECTION: frozenset[str] = frozenset({"connect_refused", "dns", "connect_error"})
TIMED_OUT: frozenset[str] = frozenset({"connect_timeout", "read_timeout", "deadline"})


#: how many delta arrival times an Exchange keeps (its timeline picture needs no more)
DELTA_MARKS = 1000


class Timings(StrictModel):
    started_at: datetime
    #: seconds from send to response headers
    headers_s: float | None = None
    first_delta_s: float | None = None
    last_byte_s: float | None = None
    total_s: float = 0.0
    #: seconds from send to each text delta (the first DELTA_MARKS of them: enough for a timeline picture,
    #: bounded for a long answer even when the Exchange keeps no SSE event records)
    delta_s: list[float] = Field(default_factory=list)


class Exchange(Shown, StrictModel):
    """One HTTP exchange with the proxy, success or not. Never raises; records."""

    request: RequestRecord
    status: int | None = None
    reason: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    #: media type only, lower-cased (``text/event-stream``), charset dropped
    content_type: str | None = None
    #: raw body text for non-SSE responses (decoded UTF-8 with replacement), kept verbatim
    body_text: str | None = None
    #: the parsed JSON body when the body was JSON
    json_body: Any = None
    #: True when the body was read as an SSE stream
    streamed: bool = False
    events: list[SSEEventRecord] = Field(default_factory=list)
    #: assistant text: concatenated ``delta.content`` or ``message.content``
    text: str = ""
    finish_reason: str | None = None
    #: ``data: [DONE]`` was seen
    done: bool = False
    usage: dict[str, Any] | None = None
    model: str | None = None
    #: error envelope from a non-2xx JSON body or an in-band stream error
    envelope: ErrorEnvelope | None = None
    #: the error arrived inside a 200 stream (``event: error`` or ``data: {"error": …}``)
    in_band_error: bool = False
    #: frames that were not valid JSON / not a chunk (kept as messages, not raised)
    protocol_errors: list[str] = Field(default_factory=list)
    #: stream oddities that are not errors (e.g. a whole ``choices[].message`` after the deltas)
    warnings: list[str] = Field(default_factory=list)
    transport_error: TransportFailure | None = None
    #: from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP-date)
    retry_after_s: float | None = None
    timings: Timings

    @property
    def ok_status(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def server(self) -> str | None:
        return self.headers.get("server")

    def raise_for_status(self) -> Exchange:
        """This exchange if it got a whole 2xx answer; else the error a caller that requires one wants:
        :class:`~hermes_nb.core.errors.ProxyUnreachable` (no connection), :class:`~hermes_nb.core.errors.ProxyTimeout`
        (a deadline), :class:`~hermes_nb.core.errors.ProxyStatusError` (an error status, or an error inside a 200
        stream), :class:`~hermes_nb.core.errors.ProtocolViolation` (a broken connection or malformed frames).
        Every message is built from the record, so it holds no secret."""
        from hermes_nb.core.errors import ProtocolViolation, ProxyStatusError, ProxyTimeout, ProxyUnreachable

        where = f"{self.request.method} {self.request.url}"
        failure = self.transport_error
        env = self.envelope
        detail = (env.message or env.type or env.code_str or "") if env is not None else (self.body_text or "")[:200]
        if failure is not None and failure.kind in NO_CONNECTION:
            raise ProxyUnreachable(f"{where}: {failure.message}")
        if failure is not None and failure.kind in TIMED_OUT:
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
    """The classification of one exchange."""

    status: Status
    #: short machine-readable reason, e.g. ``ok``, ``auth``, ``rate_limited``, ``truncated``
    reason: str
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    hint: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    retry_after_s: float | None = None
    #: the sentinel block's text, or None when absent
    final_message: str | None = None
