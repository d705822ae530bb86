"""The httpx client for the hermes proxy (sync: notebooks already run an event loop); every call returns an
Exchange, never raising for HTTP or network failures. ``request_timeout_ms`` bounds each silence (SSE comments are
no progress), never a healthy stream; ``max_duration_ms`` (a call's ``deadline_s``) caps the whole call."""

from __future__ import annotations

import errno
import functools
import json
import math
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from hermes_nb.core.config import HermesProxyRuntimeConfig, endpoint_of
from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, DEFAULT_AUTH_TOKEN, DEFAULT_TIMEOUT_MS
from hermes_nb.core.records import (
    DELTA_MARKS,
    Exchange,
    RequestRecord,
    SSEEventRecord,
    Timings,
    TransportFailure,
    TransportKind,
    TransportPhase,
)
from hermes_nb.core.redaction import Redactor, redact_headers
from hermes_nb.wire.payloads import (
    ChatStream,
    chat_request_body,
    envelope_from_json,
    in_band_error_of,
    media_type,
    parse_chat_completion,
    parse_retry_after,
)
from hermes_nb.wire.sse import SSEDecoder

#: non-SSE bodies are kept up to this size (the proxy itself refuses requests > 10 MB)
MAX_BODY_BYTES = 16 * 1024 * 1024
#: a string this long in a request body is sent in pieces (:class:`_Pieces`)
BIG_STRING = 1 << 20
#: the request extension holding the object the body was encoded from: the record uses it (no re-parse, P7)
SENT_JSON = "hermes-nb-json"
_SSE_HEADERS = {"accept": "text/event-stream", "accept-encoding": "identity", "cache-control": "no-store"}
_DNS_MARKERS = ("name or service not known", "nodename nor servname", "temporary failure in name resolution",
                "no address associated with hostname", "getaddrinfo failed", "name resolution")
DeltaCallback = Callable[[str], None]
EventCallback = Callable[[SSEEventRecord], None]


@functools.cache
def _tls_context(https: bool) -> ssl.SSLContext:
    """One per process (httpx loads the CA bundle for every client: ~25 ms); a plain-http client trusts none."""
    return httpx.create_ssl_context(trust_env=False) if https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # what httpx's json= sends


def _has_big_string(obj: Any) -> bool:
    if isinstance(obj, str):
        return len(obj) > BIG_STRING
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    return any(map(_has_big_string, values))


class _Pieces:
    """A JSON body holding a big string as byte pieces (re-iterable, for httpx's ``content=``): a 10 MB prompt is
    escaped and encoded a slice at a time as it is sent, never held whole a second time (P7)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __iter__(self) -> Iterator[bytes]:
        return (text.encode() for text in _pieces(self.obj))


def _pieces(obj: Any) -> Iterator[str]:
    if isinstance(obj, str) and len(obj) > BIG_STRING:
        yield '"'
        for start in range(0, len(obj), BIG_STRING):
            yield _dumps(obj[start:start + BIG_STRING])[1:-1]
        yield '"'
    elif isinstance(obj, dict) and all(isinstance(key, str) for key in obj):
        yield "{"
        for i, (key, value) in enumerate(obj.items()):
            yield ("," if i else "") + _dumps(key) + ":"
            yield from _pieces(value)
        yield "}"
    elif isinstance(obj, (list, tuple)):
        yield "["
        for i, value in enumerate(obj):
            yield "," if i else ""
            yield from _pieces(value)
        yield "]"
    else:
        yield _dumps(obj)


class HermesClient:
    """One proxy: a runtime config, or an endpoint alone (and its ``auth_token``) for the calls that need no model."""

    def __init__(self, target: HermesProxyRuntimeConfig | str, *, auth_token: str | None = None,
                 transport: httpx.BaseTransport | None = None, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 idle_timeout_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        config = self.config = target if isinstance(target, HermesProxyRuntimeConfig) else None
        self.endpoint = config.endpoint if config is not None else endpoint_of(str(target))
        token = config.auth_token.get_secret_value() if config is not None else auth_token or DEFAULT_AUTH_TOKEN
        self._extra_headers = dict(config.extra_headers) if config is not None else {}
        self._bearer = "Bearer " + token
        self.max_duration_ms = config.max_duration_ms if config is not None else None
        self.connect_timeout_s = connect_timeout_s
        wait = (config.request_timeout_ms if config is not None else DEFAULT_TIMEOUT_MS) / 1000.0
        #: the longest silence allowed (response start, and between signs of progress)
        self.idle_timeout_s = min(idle_timeout_s, wait) if idle_timeout_s is not None else wait
        self._clock = clock
        self._redactor = Redactor(config.secrets() if config is not None else [token], shapes=False)
        self.keep_events = True  # False: no SSE event records in the Exchange (a run logs them itself: P5)
        # no keep-alive: every call connects afresh, so its deadlines hold from the connect on
        self._http = httpx.Client(base_url=self.endpoint, transport=transport, trust_env=False,
                                  follow_redirects=False, limits=httpx.Limits(max_keepalive_connections=0),
                                  verify=_tls_context(self.endpoint.lower().startswith("https:")))

    def __repr__(self) -> str:
        model = f", model={self.config.model!r}" if self.config is not None else ""
        return f"HermesClient(endpoint={self.endpoint!r}{model})"

    def build_request(self, method: str, path: str, *, json: Any = None, headers: Mapping[str, str] | None = None,
                      auth: bool | str = True, root: bool = False, sse: bool = False) -> httpx.Request:
        """THE request builder: ``path`` is relative to the endpoint, or with ``root`` to its origin; ``auth``: the
        bearer, False for none, or that value. Later headers win: ``extra_headers``, authorization, ``headers``."""
        hdrs = {"content-type": "application/json"} if json is not None else {}
        if sse:
            hdrs.update(_SSE_HEADERS)
        hdrs.update(self._extra_headers)
        if auth is not False:
            hdrs["authorization"] = self._bearer if auth is True else auth
        hdrs.update({name.lower(): value for name, value in (headers or {}).items()})
        if isinstance(auth, str):  # a probe's verbatim value is treated as a secret too
            scheme, _, credential = auth.partition(" ")
            if credential.strip():
                self._redactor.add(auth, credential.strip())
            elif scheme.lower() not in ("bearer", "basic", "token"):
                self._redactor.add(scheme)
        content = None if json is None else _Pieces(json) if _has_big_string(json) else _dumps(json).encode()
        if isinstance(content, _Pieces):  # counted up front: sent with a Content-Length, not chunked
            hdrs["content-length"] = str(sum(map(len, content)))
        url = self._http.base_url.join("/" + path.lstrip("/")) if root else path
        return self._http.build_request(method, url, content=content, headers=hdrs, extensions={SENT_JSON: json})

    def chat(self, messages: list[dict[str, Any]], *, on_delta: DeltaCallback | None = None,
             on_event: EventCallback | None = None, stream: bool | None = None) -> Exchange:
        if self.config is None:
            raise UsageError(f"HermesClient({self.endpoint!r}): chat needs a runtime config (a model)")
        body = chat_request_body(self.config, messages, stream=stream)
        request = self.build_request("POST", "/chat/completions", json=body, sse=bool(body["stream"]))
        return self.send(request, on_delta=on_delta, on_event=on_event)

    def models(self, *, deadline_s: float = 5.0, headers: Mapping[str, str] | None = None) -> Exchange:
        return self.request("GET", "/models", headers=headers, deadline_s=deadline_s)

    def health(self, *, deadline_s: float = 5.0) -> Exchange:
        """``GET /health`` at the endpoint's origin, without a bearer (the proxy's own liveness route)."""
        return self.request("GET", "/health", root=True, auth=False, deadline_s=deadline_s)

    def request(self, method: str, path: str, *, json: Any = None, headers: Mapping[str, str] | None = None,
                auth: bool | str = True, root: bool = False, deadline_s: float | None = None,
                sse: bool = False) -> Exchange:
        req = self.build_request(method, path, json=json, headers=headers, auth=auth, root=root, sse=sse)
        return self.send(req, deadline_s=deadline_s)

    def send(self, request: httpx.Request, *, sse: bool = False, on_delta: DeltaCallback | None = None,
             on_event: EventCallback | None = None, deadline_s: float | None = None) -> Exchange:
        """Send ``request`` and record everything; an event stream is read until ``[DONE]`` or an error."""
        return _Call(self, request, on_delta, on_event, deadline_s).run()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HermesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Call:
    def __init__(self, client: HermesClient, request: httpx.Request, on_delta: DeltaCallback | None,
                 on_event: EventCallback | None, deadline_s: float | None) -> None:
        self.client, self.request, self.on_delta, self.on_event = client, request, on_delta, on_event
        self.redact = client._redactor
        self.clock = client._clock
        cap_ms = client.max_duration_ms
        self.cap = deadline_s if deadline_s is not None else cap_ms / 1000.0 if cap_ms is not None else math.inf
        self.wait = min(client.idle_timeout_s, self.cap)
        self.started_at = datetime.now(UTC)
        self.t0 = self.last_progress = self.clock()
        self.cap_at = self.t0 + self.cap
        self.fields: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}
        self.failure: TransportFailure | None = None
        self._outer_trace = request.extensions.get("trace")

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook bounds every read and write by the call's deadline (httpx's read timeout alone
        never trips on headers trickling in or keep-alives)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info["return_value"]
            for name in ("read", "write"):
                setattr(stream, name, self._bounded(getattr(stream, name)))
        if self._outer_trace is not None:
            self._outer_trace(event, info)

    def _bounded(self, io: Callable[[Any, float | None], Any]) -> Callable[..., Any]:
        def bounded(data: Any, timeout: float | None = None) -> Any:
            left = max(min(self.last_progress + self.wait, self.cap_at) - self.clock(), 0.001)
            return io(data, left if timeout is None else min(timeout, left))
        return bounded

    def _timed_out(self, kind: TransportKind, phase: TransportPhase, exception: str | None = None) -> None:
        if kind == "deadline":
            message = f"overall cap of {self.cap:g} s passed"
        else:
            where = "for the response to start" if phase == "headers" else "between signs of progress"
            message = f"no progress for {self.wait:g} s (the longest wait allowed {where})"
        self.failure = TransportFailure(kind=kind, phase=phase, message=message, exception=exception)

    def _fail(self, exc: httpx.RequestError, phase: TransportPhase) -> None:
        self.failure = failure = transport_failure(exc, phase, self.redact)
        if self.clock() >= self.cap_at:
            self._timed_out("deadline", phase, failure.exception)
        elif failure.kind == "read_timeout":
            self._timed_out("read_timeout", phase, failure.exception)

    def run(self) -> Exchange:
        connect_s = max(min(self.client.connect_timeout_s, self.cap), 0.001)
        read_s = max(self.wait, 0.001)
        self.request.extensions["timeout"] = {"connect": connect_s, "read": read_s, "write": read_s, "pool": connect_s}
        self.request.extensions["trace"] = self._trace
        try:
            response = self.client._http.send(self.request, stream=True)
        except (httpx.TransportError, httpx.DecodingError) as exc:
            self._fail(exc, "headers")
        else:
            self.timings["headers_s"] = self.clock() - self.t0
            self.last_progress = self.clock()
            self._read(response)
        finally:  # leave the request as it came: sending it again must not reach this call's hook
            if self._outer_trace is None:
                self.request.extensions.pop("trace", None)
            else:
                self.request.extensions["trace"] = self._outer_trace
        self.timings["total_s"] = self.clock() - self.t0
        return self._exchange()

    def _read(self, response: httpx.Response) -> None:
        f = self.fields
        f["status"] = response.status_code
        f["reason"] = response.reason_phrase or None
        f["headers"] = {k: self.redact.text(v) for k, v in redact_headers(response.headers).items()}
        ctype = f["content_type"] = media_type(response.headers.get("content-type"))
        f["retry_after_s"] = parse_retry_after(response.headers)
        body = bytearray()
        try:
            if ctype == "text/event-stream":
                self._read_sse(response)
            else:
                for chunk in self._chunks(response, bytes_are_progress=True):
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        del body[MAX_BODY_BYTES:]
                        f.setdefault("protocol_errors", []).append(
                            f"body larger than {MAX_BODY_BYTES} bytes; the rest was not read")
                        break
        except (httpx.TransportError, httpx.DecodingError) as exc:
            self._fail(exc, "body")
        finally:
            response.close()
        if ctype != "text/event-stream":
            self._interpret_body(bytes(body), response.status_code)

    def _chunks(self, response: httpx.Response, *, bytes_are_progress: bool) -> Iterator[bytes]:
        for chunk in response.iter_bytes():
            now = self.clock()
            self.timings["last_byte_s"] = now - self.t0
            if bytes_are_progress:
                self.last_progress = now
            yield chunk
            if now >= self.cap_at:
                self._timed_out("deadline", "body")
                return
            if now - self.last_progress >= self.wait:  # only keep-alives since the last event
                self._timed_out("read_timeout", "body")
                return

    def _read_sse(self, response: httpx.Response) -> None:
        decoder, chat = SSEDecoder(), ChatStream()
        records: list[SSEEventRecord] = []
        marks: list[float] = self.timings.setdefault("delta_s", [])
        redact = self.redact.text
        try:
            for chunk in self._chunks(response, bytes_are_progress=False):
                events = decoder.feed(chunk)
                if events:
                    self.last_progress = self.clock()
                for ev in events:
                    rec = SSEEventRecord.model_construct(  # the decoder's str / int fields: no re-validation (P2)
                        event=redact(ev.event), data=redact(ev.data), id=redact(ev.id) if ev.id else ev.id,
                        retry=ev.retry, t=self.clock() - self.t0)
                    if self.client.keep_events:
                        records.append(rec)
                    if self.on_event is not None:
                        self.on_event(rec)
                    piece = chat.feed(ev)
                    if piece:
                        self.timings.setdefault("first_delta_s", rec.t)
                        if len(marks) < DELTA_MARKS:
                            marks.append(rec.t)
                        if self.on_delta is not None:
                            self.on_delta(redact(piece))
                    if chat.finished:
                        return
        finally:
            self.fields.update(streamed=True, events=records, text=chat.text, finish_reason=chat.finish_reason,
                               done=chat.done, usage=chat.usage, model=chat.model, envelope=chat.error,
                               in_band_error=chat.in_band_error, protocol_errors=list(chat.protocol_errors),
                               warnings=list(chat.warnings))

    def _interpret_body(self, raw: bytes, status: int) -> None:
        f = self.fields
        text = raw.decode("utf-8", "replace")
        f["body_text"] = self.redact.text(text)
        ctype = f.get("content_type")
        stripped = text.strip()
        is_json = ctype is not None and (ctype.endswith("/json") or ctype.endswith("+json"))
        if not (is_json or stripped[:1] in ("{", "[")) or self.failure is not None:
            return  # a body cut short is kept as text only
        try:
            obj = json.loads(stripped)
            f["json_body"] = self.redact.data(obj)
        except (ValueError, RecursionError):  # invalid, or nested too deeply to handle
            if is_json:
                f.setdefault("protocol_errors", []).append(f"invalid JSON body ({len(raw)} bytes)")
            return
        if not 200 <= status < 300:
            f["envelope"] = envelope_from_json(obj)
        elif isinstance(obj, dict) and (in_band := in_band_error_of(obj)) is not None:
            f["envelope"], f["in_band_error"] = in_band, True
        else:
            text_out, finish, usage, model = parse_chat_completion(obj)
            f.update(text=self.redact.text(text_out), finish_reason=finish, usage=usage, model=model)

    def _exchange(self) -> Exchange:
        f = self.fields
        if f.get("text"):
            f["text"] = self.redact.text(f["text"])
        if (env := f.get("envelope")) is not None:  # every field: a server may echo the credential in type or code
            f["envelope"] = type(env).model_validate(self.redact.data(env.model_dump()))
        return Exchange(request=request_record(self.request, self.redact), transport_error=self.failure,
                        timings=Timings(started_at=self.started_at, **self.timings), **f)


def transport_failure(exc: httpx.RequestError, phase: TransportPhase, redact: Redactor) -> TransportFailure:
    """An httpx request error as a record; connect errors told apart by the cause chain, else by message texts."""
    chain: list[BaseException] = []
    item: BaseException | None = exc
    while item is not None and item not in chain:
        chain.append(item)
        item = item.__cause__ or item.__context__
    text = " ".join(str(e) for e in chain).lower()
    errnos = {e.errno for e in chain if isinstance(e, OSError)}
    kind: TransportKind
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        kind, phase = "connect_timeout", "connect"
    elif isinstance(exc, httpx.ConnectError):
        phase = "connect"
        if any(isinstance(e, socket.gaierror) for e in chain) or any(m in text for m in _DNS_MARKERS):
            kind = "dns"
        elif errno.ECONNREFUSED in errnos or "connection refused" in text or "[errno 111]" in text:
            kind = "connect_refused"
        else:
            kind = "connect_error"
    elif isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout)):
        kind = "read_timeout"
    elif isinstance(exc, httpx.RemoteProtocolError):
        kind = "remote_protocol"
    elif isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        reset = errnos & {errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED} or "reset" in str(exc).lower()
        kind = "reset" if reset else "read_error"
    else:
        kind = "other"
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.ProxyError, httpx.LocalProtocolError)):
            phase = "connect"
    name = f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}"
    return TransportFailure(kind=kind, phase=phase, message=redact.text(str(exc)) or type(exc).__name__,
                            exception=name)


def request_record(request: httpx.Request, redact: Redactor) -> RequestRecord:
    """What was sent, user info, credentials and secrets masked."""
    body = request.extensions.get(SENT_JSON)
    if body is None:
        try:
            content = request.content
        except httpx.RequestNotRead:  # a streaming request body: not ours to read
            content = b""
        try:
            body = json.loads(content) if content else None
        except ValueError:  # UnicodeDecodeError included
            body = content.decode("utf-8", "replace")
    url = request.url.copy_with(userinfo=b"") if request.url.userinfo else request.url
    return RequestRecord(method=request.method, url=redact.text(str(url)), headers=redact_headers(request.headers),
                         body=redact.data(body))
