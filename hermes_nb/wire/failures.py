"""httpx objects to records: request errors as :class:`~hermes_nb.core.records.TransportFailure`, the request
sent as :class:`~hermes_nb.core.records.RequestRecord` (secrets masked).

Refused vs DNS vs other connect errors are told apart from the exception's
cause chain (errno, :class:`socket.gaierror`), with the usual message texts as a
fallback for errors built without a cause (as in ``httpx.MockTransport`` tests).
"""

from __future__ import annotations

import errno
import socket

import httpx

from hermes_nb.core.records import RequestRecord, TransportFailure, TransportKind, TransportPhase
from hermes_nb.core.redaction import Redactor, redact_headers
from hermes_nb.wire.payloads import loads_exact

__all__ = ["SENT_JSON", "transport_failure", "request_record"]

_DNS_MARKERS = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no address associated with hostname",
    "getaddrinfo failed",
    "name resolution",
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo.extend([item.__cause__, item.__context__])
    return seen


def _errnos(exc: BaseException) -> set[int]:
    return {e.errno for e in _chain(exc) if isinstance(e, OSError) and isinstance(e.errno, int)}


def _connect_kind(exc: BaseException) -> TransportKind:
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, socket.gaierror) for e in chain) or any(m in text for m in _DNS_MARKERS):
        return "dns"
    if errno.ECONNREFUSED in _errnos(exc) or "connection refused" in text or "[errno 111]" in text:
        return "connect_refused"
    return "connect_error"


def transport_failure(exc: httpx.RequestError, *, phase: TransportPhase, deadline_hit: bool,
                      redact: Redactor) -> TransportFailure:
    """Map an httpx request error to a :class:`TransportFailure` record."""
    kind: TransportKind
    if deadline_hit and not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        kind = "deadline"
    elif isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        kind, phase = "connect_timeout", "connect"
    elif isinstance(exc, httpx.ConnectError):
        kind, phase = _connect_kind(exc), "connect"
    elif isinstance(exc, httpx.ReadTimeout):
        kind = "read_timeout"
    elif isinstance(exc, httpx.RemoteProtocolError):
        kind = "remote_protocol"
    elif isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        reset = _errnos(exc) & {errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED}
        kind = "reset" if reset or "reset" in str(exc).lower() else "read_error"
    else:
        kind = "other"
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.ProxyError, httpx.LocalProtocolError)):
            phase = "connect"
    message = redact.text(str(exc)) or type(exc).__name__
    name = f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}"
    return TransportFailure(kind=kind, phase=phase, message=message, exception=name)


#: the request extension (httpx's per-request extra information) holding the object its JSON body was encoded
#: from: the record uses it as it is instead of parsing the bytes back (a 10 MB prompt is not copied twice more)
SENT_JSON = "hermes-nb-json"


def request_record(request: httpx.Request, redact: Redactor) -> RequestRecord:
    """What was sent: method, URL (user info dropped), headers (sensitive ones masked), body (redacted)."""
    content = b""
    body = request.extensions.get(SENT_JSON)
    if body is None:
        try:
            content = request.content
        except httpx.RequestNotRead:  # a streaming request body: not ours to read
            content = b""
    else:
        body = redact.data(body)
    if content:
        try:
            body = redact.data(loads_exact(content.decode("utf-8")))
        except ValueError:  # UnicodeDecodeError included
            body = redact.text(content.decode("utf-8", "replace"))
    url = request.url
    if url.userinfo:
        url = url.copy_with(userinfo=b"")
    return RequestRecord(method=request.method, url=redact.text(str(url)),
                         headers=redact_headers(request.headers), body=body)
