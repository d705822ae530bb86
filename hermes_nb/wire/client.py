"""The httpx client for the hermes proxy: one request builder, Exchange records.

Sync only (notebooks already run an event loop, so no ``asyncio.run``). Every
call returns an :class:`~hermes_nb.core.records.Exchange` and never raises for HTTP
or network failures; :func:`hermes_nb.wire.reading.classify` judges it.

Deadlines (:mod:`hermes_nb.wire.watchdog`): connect (:data:`~hermes_nb.core.facts.CONNECT_TIMEOUT_S`);
``request_timeout_ms`` bounds the wait for the response to start and each silence between signs of
progress, never a healthy stream; the optional ``max_duration_ms`` (per-call ``deadline_s`` for probes and
``/models``) caps the whole call.
"""

from __future__ import annotations

import json
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
    SSEEventRecord,
    Timings,
    TransportFailure,
    TransportKind,
    TransportPhase,
)
from hermes_nb.core.redaction import Redactor, redact_headers
from hermes_nb.wire.bodies import request_body
from hermes_nb.wire.failures import SENT_JSON, request_record, transport_failure
from hermes_nb.wire.payloads import (
    ChatStream,
    chat_request_body,
    envelope_from_json,
    in_band_error_of,
    media_type,
    parse_chat_completion,
    parse_error_body,
    parse_retry_after,
)
from hermes_nb.wire.sse import SSEDecoder
from hermes_nb.wire.tls import tls_context
from hermes_nb.wire.watchdog import Deadlines as _Deadlines

__all__ = ["HermesClient", "MAX_BODY_BYTES"]

#: non-SSE bodies are kept up to this size (the proxy itself refuses requests > 10 MB)
MAX_BODY_BYTES = 16 * 1024 * 1024
DeltaCallback = Callable[[str], None]
EventCallback = Callable[[SSEEventRecord], None]


class HermesClient:
    """Talks to one proxy endpoint: a :class:`HermesProxyRuntimeConfig`, or an endpoint alone for the calls
    that need no model (``GET /models``, ``/health``, any route through :meth:`request`; :meth:`chat` needs the
    config). ``auth_token``: the bearer of an endpoint-alone client (default the placeholder)."""

    def __init__(self, target: HermesProxyRuntimeConfig | str, *, auth_token: str | None = None,
                 transport: httpx.BaseTransport | None = None, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 idle_timeout_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        config = target if isinstance(target, HermesProxyRuntimeConfig) else None
        self.config = config
        self.endpoint = target.endpoint if isinstance(target, HermesProxyRuntimeConfig) else endpoint_of(target)
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
        self._urls: dict[tuple[str, str, bool], httpx.URL] = {}
        self.keep_events = True  # False: no SSE event records in the Exchange (a run logs them itself: P5)
        # no keep-alive: every request connects afresh, so the deadline watchdog is armed from the connect on
        self._http = httpx.Client(transport=transport, trust_env=False, follow_redirects=False, timeout=None,
                                  limits=httpx.Limits(max_keepalive_connections=0), verify=tls_context(self.endpoint))

    def __repr__(self) -> str:
        model = f", model={self.config.model!r}" if self.config is not None else ""
        return f"HermesClient(endpoint={self.endpoint!r}{model})"

    # ------------------------------------------------------------------ building

    def build_request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        auth: bool | str = True,
        root: bool = False,
        sse: bool = False,
    ) -> httpx.Request:
        """THE request builder: URL, headers and body for every call.

        ``path`` is relative to the endpoint (``/chat/completions`` ->
        ``<endpoint>/chat/completions``) or, with ``root=True``, to its origin
        (``/health``). Headers: content-type (with ``json``), accept
        (``sse``), authorization (``auth``), then ``extra_headers`` (they win),
        then ``headers``. ``auth=False`` omits authorization and ``auth="..."``
        sends that exact value, even over an ``extra_headers`` authorization:
        the caller asked for it explicitly.
        """
        key = (self.endpoint, path, root)
        url = self._urls.get(key)
        if url is None:  # URL parsing is most of httpx's build cost: once per endpoint and path (P2)
            endpoint = httpx.URL(self.endpoint)
            rel = path.lstrip("/")
            if root:
                url = endpoint.join("/" + rel)
            else:
                base = endpoint.copy_with(raw_path=endpoint.raw_path.rstrip(b"/") + b"/")
                url = base.join(rel)
            self._urls[key] = url  # a client sends to a handful of paths
        hdrs: dict[str, str] = {}
        if json is not None:
            hdrs["content-type"] = "application/json"
        if sse:
            hdrs["accept"] = "text/event-stream"
            hdrs["accept-encoding"] = "identity"
            hdrs["cache-control"] = "no-store"
        if auth is True:
            hdrs["authorization"] = self._bearer
        elif isinstance(auth, str):
            hdrs["authorization"] = auth
        for name, value in self._extra_headers.items():
            hdrs[name.lower()] = value
        if auth is False:
            hdrs.pop("authorization", None)
        elif isinstance(auth, str):
            hdrs["authorization"] = auth
        for name, value in (headers or {}).items():
            hdrs[name.lower()] = value
        if isinstance(auth, str):  # a probe's verbatim value is treated as a secret too
            scheme, _, credential = auth.partition(" ")
            if credential.strip():
                self._redactor.add(auth, credential.strip())
            elif scheme.lower() not in ("bearer", "basic", "token"):
                self._redactor.add(scheme)
        return self._http.build_request(method, url, content=request_body(json, hdrs), headers=hdrs,
                                        extensions={SENT_JSON: json})  # the record reads it, not the bytes (P7)

    # ------------------------------------------------------------------ calls

    def chat(self, messages: list[dict[str, Any]], *, on_delta: DeltaCallback | None = None,
             on_event: EventCallback | None = None, stream: bool | None = None) -> Exchange:
        """``POST <endpoint>/chat/completions`` with the config's body (an endpoint alone has no model: UsageError)."""
        if self.config is None:
            raise UsageError(f"HermesClient({self.endpoint!r}): chat needs a runtime config (a model)")
        body = chat_request_body(self.config, messages, stream=stream)
        request = self.build_request("POST", "/chat/completions", json=body, sse=bool(body["stream"]))
        return self.send(request, sse=bool(body["stream"]), on_delta=on_delta, on_event=on_event)

    def models(self, *, deadline_s: float = 5.0, headers: Mapping[str, str] | None = None) -> Exchange:
        """``GET <endpoint>/models``; one deadline covers headers and body."""
        return self.request("GET", "/models", headers=headers, deadline_s=deadline_s)

    def health(self, *, deadline_s: float = 5.0) -> Exchange:
        """``GET /health`` at the endpoint's origin, without a bearer (the proxy's own liveness route)."""
        return self.request("GET", "/health", root=True, auth=False, deadline_s=deadline_s)

    def request(self, method: str, path: str, *, json: Any = None, headers: Mapping[str, str] | None = None,
                auth: bool | str = True, root: bool = False, deadline_s: float | None = None,
                sse: bool = False) -> Exchange:
        """A raw call (probes): same builder, same recording."""
        req = self.build_request(method, path, json=json, headers=headers, auth=auth, root=root, sse=sse)
        return self.send(req, sse=sse, deadline_s=deadline_s)

    def send(self, request: httpx.Request, *, sse: bool = False, on_delta: DeltaCallback | None = None,
             on_event: EventCallback | None = None, deadline_s: float | None = None) -> Exchange:
        """Send ``request`` and record everything; never raises for HTTP/network failures.

        The body is read as SSE when the response says ``text/event-stream``
        (whatever was asked), else as one body (JSON when it parses).
        ``on_delta`` gets each content piece, ``on_event`` each SSE event, as
        they arrive. Reading stops at ``[DONE]`` or an in-band error.
        """
        return _Call(self, request, on_delta, on_event, deadline_s).run(sse)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HermesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- one call

class _Call:
    """State of one request/response; produces the Exchange."""

    def __init__(self, client: HermesClient, request: httpx.Request, on_delta: DeltaCallback | None,
                 on_event: EventCallback | None, deadline_s: float | None) -> None:
        self.client, self.request = client, request
        self.on_delta, self.on_event = on_delta, on_event
        self.redact = client._redactor
        self.clock = client._clock
        cap_ms = client.max_duration_ms
        #: the overall cap (None: no cap) is a per-call deadline (probes, /models) or max_duration_ms
        cap = deadline_s if deadline_s is not None else (cap_ms / 1000.0 if cap_ms is not None else None)
        self.started_at = datetime.now(UTC)
        self.limits = _Deadlines(wait=client.idle_timeout_s, cap=cap, clock=self.clock)
        self.t0 = self.limits.t0
        self.fields: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}
        self.failure: TransportFailure | None = None
        self._outer_trace = request.extensions.get("trace")

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore trace hook: arm the watchdog once the TCP connection exists."""
        if event == "connection.connect_tcp.complete":
            self.limits.arm(info.get("return_value"))
        if self._outer_trace is not None:
            self._outer_trace(event, info)

    def _elapsed(self) -> float:
        return self.clock() - self.t0

    def _fail(self, exc: httpx.RequestError, phase: TransportPhase) -> None:
        fired, limits = self.limits.fired, self.limits
        capped = fired == "cap" or limits.capped(self.clock())
        self.failure = transport_failure(exc, phase=phase, deadline_hit=capped, redact=self.redact)
        if capped:
            self._timed_out("deadline", phase)
        elif fired == "idle" or self.failure.kind == "read_timeout":
            self._timed_out("read_timeout", phase)

    def _timed_out(self, kind: TransportKind, phase: TransportPhase) -> None:
        exc = self.failure.exception if self.failure is not None else None
        self.failure = self.limits.failure(kind, phase, exc)

    def run(self, sse: bool) -> Exchange:
        client = self.client
        cap = self.limits.cap
        read_s = max(self.limits.wait, 0.001)
        connect_s = max(min(client.connect_timeout_s, cap) if cap is not None else client.connect_timeout_s, 0.001)
        self.request.extensions["timeout"] = httpx.Timeout(connect_s, read=read_s, write=read_s,
                                                           pool=connect_s).as_dict()
        self.request.extensions["trace"] = self._trace
        response: httpx.Response | None = None
        try:
            try:
                response = client._http.send(self.request, stream=True)
            except (httpx.TransportError, httpx.DecodingError) as exc:
                self._fail(exc, "headers")
            if response is not None:
                self.timings["headers_s"] = self._elapsed()
                self.limits.progress(self.clock())
                self._read(response)
        finally:
            self.limits.cancel()
            # leave the request as it came: sending it again must not reach this call's hook
            if self._outer_trace is None:
                self.request.extensions.pop("trace", None)
            else:
                self.request.extensions["trace"] = self._outer_trace
        self.timings["total_s"] = self._elapsed()
        return self._exchange()

    def _read(self, response: httpx.Response) -> None:
        f = self.fields
        f["status"] = response.status_code
        f["reason"] = response.reason_phrase or None
        f["headers"] = {k: self.redact.text(v) for k, v in redact_headers(response.headers).items()}
        ctype = media_type(response.headers.get("content-type"))
        f["content_type"] = ctype
        f["retry_after_s"] = parse_retry_after(response.headers)
        sse = ctype == "text/event-stream"
        body = bytearray()
        self.limits.arm(response)  # no connect event seen (e.g. a custom transport)
        try:
            if sse:
                self._read_sse(response)
            else:
                self._read_body(response, body)
        except (httpx.TransportError, httpx.DecodingError) as exc:
            self._fail(exc, "body")
        finally:
            response.close()
        fired = self.limits.fired
        if fired is not None and self.failure is None:
            self._timed_out("deadline" if fired == "cap" else "read_timeout", "body")
        if not sse:
            self._interpret_body(bytes(body), response.status_code)

    def _chunks(self, response: httpx.Response, *, bytes_are_progress: bool) -> Iterator[bytes]:
        limits = self.limits
        for chunk in response.iter_bytes():
            now = self.clock()
            self.timings["last_byte_s"] = now - self.t0
            if bytes_are_progress:
                limits.progress(now)
            yield chunk
            if limits.capped(now):
                self._timed_out("deadline", "body")
                return
            if limits.silent(now):  # only keep-alives since the last event
                self._timed_out("read_timeout", "body")
                return

    def _read_sse(self, response: httpx.Response) -> None:
        f = self.fields
        f["streamed"] = True
        decoder, chat = SSEDecoder(), ChatStream()
        records: list[SSEEventRecord] = []
        marks: list[float] = self.timings.setdefault("delta_s", [])
        redact = self.redact.text
        on_delta, on_event = self.on_delta, self.on_event
        try:
            for chunk in self._chunks(response, bytes_are_progress=False):
                events = decoder.feed(chunk)
                if events:
                    self.limits.progress(self.clock())
                for ev in events:
                    rec = SSEEventRecord.model_construct(  # the decoder's str / int fields: no re-validation (P2)
                        event=redact(ev.event), data=redact(ev.data), id=redact(ev.id) if ev.id else ev.id,
                        retry=ev.retry, t=self._elapsed())
                    if self.client.keep_events:
                        records.append(rec)
                    if on_event is not None:
                        on_event(rec)
                    piece = chat.feed(ev)
                    if piece:
                        if "first_delta_s" not in self.timings:
                            self.timings["first_delta_s"] = rec.t
                        if len(marks) < DELTA_MARKS:
                            marks.append(rec.t)
                        if on_delta is not None:
                            on_delta(redact(piece))
                    if chat.finished:
                        return
            decoder.flush()
        finally:
            f.update(events=records, text=chat.text, finish_reason=chat.finish_reason, done=chat.done,
                     usage=chat.usage, model=chat.model, envelope=chat.error, in_band_error=chat.in_band_error,
                     protocol_errors=list(chat.protocol_errors), warnings=list(chat.warnings))

    def _read_body(self, response: httpx.Response, buf: bytearray) -> None:
        for chunk in self._chunks(response, bytes_are_progress=True):
            buf += chunk
            if len(buf) > MAX_BODY_BYTES:
                del buf[MAX_BODY_BYTES:]
                self.fields.setdefault("protocol_errors", []).append(
                    f"body larger than {MAX_BODY_BYTES} bytes; the rest was not read")
                return

    def _interpret_body(self, raw: bytes, status: int) -> None:
        """Keep the body verbatim; parse JSON (a completion, or an error envelope)."""
        f = self.fields
        text = raw.decode("utf-8", "replace")
        f["body_text"] = self.redact.text(text)
        ctype = f.get("content_type")
        stripped = text.strip()
        looks_json = bool(stripped) and stripped[0] in "{["
        is_json = ctype is not None and (ctype.endswith("/json") or ctype.endswith("+json"))
        if not (is_json or looks_json) or self.failure is not None:
            return  # a body cut short is kept as text only
        try:
            obj = json.loads(stripped)
            f["json_body"] = self.redact.data(obj)
        except (ValueError, RecursionError):  # invalid, or nested too deeply to handle
            if is_json:
                f.setdefault("protocol_errors", []).append(f"invalid JSON body ({len(raw)} bytes)")
            return
        envelope = envelope_from_json(obj)
        if 200 <= status < 300:
            in_band = in_band_error_of(obj) if isinstance(obj, dict) else None
            if in_band is not None:
                f["envelope"], f["in_band_error"] = in_band, True
                return
            text_out, finish, usage, model = parse_chat_completion(obj)
            f.update(text=self.redact.text(text_out), finish_reason=finish, usage=usage, model=model)
        else:
            f["envelope"] = envelope if envelope is not None else parse_error_body(stripped, ctype)

    def _exchange(self) -> Exchange:
        f = self.fields
        if f.get("text"):
            f["text"] = self.redact.text(f["text"])
        env = f.get("envelope")
        if env is not None:  # every field: a server may echo the credential in type or code too
            f["envelope"] = type(env).model_validate(self.redact.data(env.model_dump()))
        timings = Timings(started_at=self.started_at, **self.timings)
        return Exchange(request=request_record(self.request, self.redact), transport_error=self.failure,
                        timings=timings, **f)
