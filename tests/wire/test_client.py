"""HermesClient on httpx.MockTransport (pure client behaviour) plus loopback sockets for the deadlines."""

from __future__ import annotations

import errno
import json
import logging
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb import Exchange, HermesClient, HermesProxyRuntimeConfig
from hermes_nb.core.records import SSEEventRecord
from hermes_nb.wire.reading import classify
from tests.helpers import wrap_final_message

MSGS = [{"role": "user", "content": "hi"}]


def cfg(**kw: Any) -> HermesProxyRuntimeConfig:
    return HermesProxyRuntimeConfig(**{"model": "hermes-4-405b", **kw})


def chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    obj = {"object": "chat.completion.chunk", "model": "hermes-4-405b",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
SSE = {"content-type": "text/event-stream"}


class Body(httpx.SyncByteStream):
    """A response body that yields parts, then optionally raises; counts what was pulled."""

    def __init__(self, parts: list[bytes], exc: Exception | None = None,
                 on_part: Callable[[], None] | None = None) -> None:
        self.parts, self.exc, self.on_part = parts, exc, on_part
        self.pulled = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for part in self.parts:
            self.pulled += 1
            if self.on_part is not None:
                self.on_part()
            yield part
        if self.exc is not None:
            raise self.exc

    def close(self) -> None:
        self.closed = True


def client_for(handler: Callable[[httpx.Request], httpx.Response], **kw: Any) -> HermesClient:
    clock = kw.pop("clock", None)
    extra = {"clock": clock} if clock else {}
    return HermesClient(cfg(**kw), transport=httpx.MockTransport(handler), **extra)


def stream_response(*parts: bytes, exc: Exception | None = None, headers: dict[str, str] | None = None,
                    status: int = 200) -> tuple[Callable[[httpx.Request], httpx.Response], Body]:
    body = Body(list(parts), exc)
    return (lambda request: httpx.Response(status, headers=headers or SSE, stream=body)), body


# ----------------------------------------------------------------- request building


def test_urls_are_joined_not_glued() -> None:
    client = HermesClient(cfg(endpoint="http://127.0.0.1:9/v1/"))
    assert str(client.build_request("POST", "/chat/completions").url) == "http://127.0.0.1:9/v1/chat/completions"
    assert str(client.build_request("GET", "models").url) == "http://127.0.0.1:9/v1/models"
    assert str(client.build_request("GET", "/health", root=True).url) == "http://127.0.0.1:9/health"
    assert str(client.build_request("GET", "/", root=True).url) == "http://127.0.0.1:9/"
    sub = HermesClient(cfg(endpoint="https://h.example/proxy/v1"))
    assert str(sub.build_request("GET", "/models").url) == "https://h.example/proxy/v1/models"


def test_headers_order_and_precedence() -> None:
    client = HermesClient(cfg(auth_token="tok-123456", extra_headers={"X-Team": "a", "Accept": "x/y"}))
    req = client.build_request("POST", "/chat/completions", json={"a": 1}, sse=True, headers={"X-Team": "b"})
    assert req.headers["authorization"] == "Bearer tok-123456"
    assert req.headers["content-type"] == "application/json"
    assert req.headers["accept"] == "x/y"  # extra_headers win over defaults
    assert req.headers["x-team"] == "b"  # the call's headers win over extra_headers
    assert json.loads(req.content) == {"a": 1}


def test_auth_modes() -> None:
    client = HermesClient(cfg(auth_token="from-token"))  # the bearer has its own key (extra_headers may not set it)
    assert client.build_request("GET", "/models").headers["authorization"] == "Bearer from-token"
    assert "authorization" not in client.build_request("GET", "/models", auth=False).headers
    assert client.build_request("GET", "/models", auth="Basic xyz").headers["authorization"] == "Basic xyz"
    plain = HermesClient(cfg())
    assert plain.build_request("GET", "/models").headers["authorization"] == "Bearer hermes-proxy"


# ----------------------------------------------------------------- streaming success


def test_stream_success_records_everything_and_calls_back_in_order() -> None:
    usage = b'data: {"object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":9}}\n\n'
    final = wrap_final_message("did it")
    handler, body = stream_response(b": ping\n\n", chunk("He"), chunk("llo\n"), chunk(final, "stop"), usage, DONE)
    deltas: list[str] = []
    events: list[SSEEventRecord] = []
    with client_for(handler) as client:
        exchange = client.chat(MSGS, on_delta=deltas.append, on_event=events.append)
    assert deltas == ["He", "llo\n", final]
    assert [e.data[:6] for e in events] == ['{"obje'] * 4 + ["[DONE]"]
    assert exchange.events == events
    assert (exchange.status, exchange.streamed, exchange.done, exchange.finish_reason) == (200, True, True, "stop")
    assert exchange.text == "Hello\n" + final and exchange.usage == {"total_tokens": 9}
    assert exchange.model == "hermes-4-405b" and exchange.transport_error is None
    t = exchange.timings
    assert t.headers_s is not None and t.first_delta_s is not None and t.last_byte_s is not None
    assert 0 <= t.headers_s <= t.first_delta_s <= t.last_byte_s <= t.total_s
    assert exchange.request.headers["authorization"] == "Bearer <redacted>"
    assert exchange.request.body["stream_options"] == {"include_usage": True}
    assert body.closed
    outcome = classify(exchange, cfg())
    assert (outcome.status, outcome.final_message) == ("passed", "did it")


def test_on_delta_is_called_as_each_piece_arrives() -> None:
    deltas: list[str] = []
    seen_when_pulled: list[list[str]] = []
    body = Body([chunk("a"), chunk("b"), chunk("c", "stop"), DONE],
                on_part=lambda: seen_when_pulled.append(list(deltas)))
    client = client_for(lambda r: httpx.Response(200, headers=SSE, stream=body))
    client.chat(MSGS, on_delta=deltas.append)
    # before each network read, every earlier piece has already been handed to the callback
    assert seen_when_pulled == [[], ["a"], ["a", "b"], ["a", "b", "c"]]


@pytest.mark.parametrize(("timeout_ms", "connect", "idle", "want_read"), [
    (60_000, 2.0, 7.0, 7.0),      # connect and idle-read are separate settings
    (3_000, 2.0, 7.0, 3.0),       # idle read never exceeds the overall deadline
    (600_000, 5.0, None, 600.0),  # default idle = request_timeout_ms: it bounds each silence
])
def test_connect_idle_and_overall_deadlines_are_separate(timeout_ms: int, connect: float, idle: float | None,
                                                          want_read: float) -> None:
    seen: dict[str, Any] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(request.extensions["timeout"])
        return httpx.Response(200, json={"data": []})

    kw = {} if idle is None else {"idle_timeout_s": idle}
    client = HermesClient(cfg(request_timeout_ms=timeout_ms), transport=httpx.MockTransport(handler),
                          connect_timeout_s=connect, **kw)
    client.chat(MSGS)
    assert (seen["connect"], seen["read"], seen["pool"]) == (connect, want_read, connect)
    client.models(deadline_s=1.5)  # a per-call overall deadline caps connect and read too
    assert (seen["connect"], seen["read"]) == (min(connect, 1.5), 1.5)


def test_reading_stops_at_done() -> None:
    handler, body = stream_response(chunk("a", "stop"), DONE, chunk("never"),
                                    exc=httpx.ReadError("must not be reached"))
    exchange = client_for(handler).chat(MSGS)
    assert exchange.done and exchange.text == "a" and exchange.transport_error is None
    assert body.pulled == 2 and body.closed


def test_charset_parameter_is_ignored_sse_is_utf8() -> None:
    handler, _ = stream_response(chunk("é€"), DONE, headers={"content-type": "Text/Event-Stream; charset=latin-1"})
    exchange = client_for(handler).chat(MSGS)
    assert exchange.content_type == "text/event-stream" and exchange.text == "é€"


def test_in_band_error_event_under_200() -> None:
    handler, _ = stream_response(chunk("par"), b'event: error\ndata: {"error":{"message":"upstream died"}}\n\n',
                                 chunk("ignored"))
    exchange = client_for(handler).chat(MSGS)
    assert exchange.in_band_error and exchange.envelope is not None
    assert exchange.envelope.message == "upstream died" and exchange.text == "par"
    assert classify(exchange, cfg()).reason == "in_band_error"


def test_truncated_stream_keeps_partial_text() -> None:
    handler, _ = stream_response(chunk("half an ans"), b"data: {\"choi")
    exchange = client_for(handler).chat(MSGS)
    assert not exchange.done and exchange.text == "half an ans" and exchange.transport_error is None
    assert classify(exchange, cfg()).reason == "truncated"


# ----------------------------------------------------------------- content-type sniffing


def test_stream_request_answered_with_json_error_is_read_as_json() -> None:
    payload = {"error": {"message": "Failed to refresh", "type": "upstream_auth_failed",
                         "code": "upstream_auth_failed"}}
    client = client_for(lambda r: httpx.Response(401, json=payload))
    exchange = client.chat(MSGS)
    assert not exchange.streamed and exchange.status == 401 and exchange.json_body == payload
    assert exchange.envelope is not None and exchange.envelope.type == "upstream_auth_failed"
    assert json.loads(exchange.body_text or "") == payload
    assert classify(exchange, cfg()).status == "blocked"


def test_stream_request_answered_with_json_completion() -> None:
    completion = {"model": "m", "choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}]}
    exchange = client_for(lambda r: httpx.Response(200, json=completion)).chat(MSGS)
    assert not exchange.streamed and exchange.text == "whole" and exchange.finish_reason == "stop"


def test_non_stream_chat_with_error_object_under_200() -> None:
    exchange = client_for(lambda r: httpx.Response(200, json={"error": {"message": "nope"}})).chat(MSGS, stream=False)
    assert exchange.in_band_error and classify(exchange, cfg()).reason == "in_band_error"


@pytest.mark.parametrize(
    ("status", "ctype", "body"),
    [(404, "text/plain; charset=utf-8", "404: Not Found"),
     (502, "text/html", "<html><body>502 Bad Gateway</body></html>")],
)
def test_non_json_error_bodies_are_kept_verbatim(status: int, ctype: str, body: str) -> None:
    client = client_for(lambda r: httpx.Response(status, headers={"content-type": ctype}, content=body.encode()))
    exchange = client.chat(MSGS)
    assert exchange.body_text == body and exchange.envelope is None and exchange.json_body is None
    assert classify(exchange, cfg()).reason == "http_error"


def test_invalid_json_body_is_a_protocol_error() -> None:
    client = client_for(lambda r: httpx.Response(200, headers={"content-type": "application/json"}, content=b"{x"))
    exchange = client.chat(MSGS, stream=False)
    assert exchange.protocol_errors and exchange.body_text == "{x"
    assert classify(exchange, cfg()).reason == "protocol_error"


def test_retry_after_is_recorded() -> None:
    client = client_for(lambda r: httpx.Response(429, headers={"retry-after": "12"}, json={"error": {"code": 429}}))
    exchange = client.chat(MSGS)
    assert exchange.retry_after_s == 12.0
    assert classify(exchange, cfg()).retry_after_s == 12.0


def test_models_and_raw_requests() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/health":
            return httpx.Response(200, json={"status": "ok"})
        return httpx.Response(200, json={"object": "list", "data": [{"id": "hermes-4-405b"}]})

    client = client_for(handler)
    models = client.models()
    assert models.json_body["data"][0]["id"] == "hermes-4-405b" and not models.streamed
    health = client.request("GET", "/health", root=True, auth=False)
    assert health.json_body == {"status": "ok"}
    assert str(seen[1].url) == "http://127.0.0.1:8645/health" and "authorization" not in seen[1].headers
    basic = client.request("GET", "/models", auth="Basic xyz")
    assert seen[2].headers["authorization"] == "Basic xyz"
    assert basic.request.headers["authorization"] == "Basic <redacted>"


# ----------------------------------------------------------------- transport failures


def _raise(exc: Exception) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return handler


def _chained(outer: type[httpx.RequestError], inner: BaseException, message: str) -> Callable[..., httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise inner
        except BaseException as exc:  # noqa: BLE001 - re-raised as the httpx error, chained like httpcore does
            raise outer(message) from exc

    return handler


@pytest.mark.parametrize(
    ("handler", "kind", "phase"),
    [
        (_chained(httpx.ConnectError, ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "connect failed"),
         "connect_refused", "connect"),
        (_raise(httpx.ConnectError("[Errno 111] Connection refused")), "connect_refused", "connect"),
        (_chained(httpx.ConnectError, socket.gaierror(socket.EAI_NONAME, "unknown"), "connect failed"),
         "dns", "connect"),
        (_raise(httpx.ConnectError("[Errno -2] Name or service not known")), "dns", "connect"),
        (_raise(httpx.ConnectError("[Errno 113] No route to host")), "connect_error", "connect"),
        (_raise(httpx.ConnectTimeout("timed out")), "connect_timeout", "connect"),
        (_raise(httpx.ReadTimeout("timed out")), "read_timeout", "headers"),
        (_raise(httpx.RemoteProtocolError("Server disconnected without sending a response.")),
         "remote_protocol", "headers"),
        (_raise(httpx.UnsupportedProtocol("Request URL has an unsupported protocol")), "other", "connect"),
    ],
)
def test_failures_before_a_response_are_recorded_not_raised(handler: Any, kind: str, phase: str) -> None:
    exchange = client_for(handler).chat(MSGS)
    assert exchange.status is None and exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == (kind, phase)
    assert exchange.transport_error.exception and exchange.transport_error.exception.startswith("httpx.")


@pytest.mark.parametrize(
    ("exc", "kind", "reason"),
    [
        (httpx.ReadError("[Errno 104] Connection reset by peer"), "reset", "stream_broken"),
        (httpx.ReadError("read failed"), "read_error", "stream_broken"),
        (httpx.ReadTimeout("timed out"), "read_timeout", "read_timeout"),
        (httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
         "remote_protocol", "stream_broken"),
    ],
)
def test_errors_mid_iteration_keep_partial_text(exc: Exception, kind: str, reason: str) -> None:
    handler, body = stream_response(chunk("Hel"), chunk("lo "), exc=exc)
    deltas: list[str] = []
    exchange = client_for(handler).chat(MSGS, on_delta=deltas.append)
    assert exchange.status == 200 and exchange.text == "Hello " and deltas == ["Hel", "lo "]
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == (kind, "body")
    outcome = classify(exchange, cfg())
    assert (outcome.status, outcome.reason) == ("failed", reason)
    assert "6 characters of partial text" in outcome.errors[0]
    assert body.closed


def test_reset_detected_from_errno_in_the_cause_chain() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE, stream=_ResetBody())

    exchange = client_for(handler).chat(MSGS)
    assert exchange.transport_error is not None and exchange.transport_error.kind == "reset"
    assert exchange.text == "x"


class _ResetBody(httpx.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield chunk("x")
        try:
            raise ConnectionResetError(errno.ECONNRESET, "reset")
        except ConnectionResetError as exc:
            raise httpx.ReadError("read failed") from exc


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_steady_stream_may_outlast_request_timeout_ms() -> None:
    clock = FakeClock()

    def tick() -> None:
        clock.now += 1.0

    body = Body([chunk(str(i)) for i in range(10)] + [chunk("", "stop"), DONE], on_part=tick)
    client = client_for(lambda r: httpx.Response(200, headers=SSE, stream=body), clock=clock,
                        request_timeout_ms=3500)
    exchange = client.chat(MSGS)  # 12 s of stream, never 3.5 s of silence
    assert exchange.transport_error is None and exchange.done and exchange.text == "0123456789"


def test_max_duration_ms_cuts_a_stream_that_keeps_sending() -> None:
    clock = FakeClock()

    def tick() -> None:
        clock.now += 1.0

    body = Body([chunk(str(i)) for i in range(10)] + [DONE], on_part=tick)
    client = client_for(lambda r: httpx.Response(200, headers=SSE, stream=body), clock=clock,
                        request_timeout_ms=60_000, max_duration_ms=3500)
    exchange = client.chat(MSGS)
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("deadline", "body")
    assert exchange.text == "0123" and body.pulled == 4 and body.closed
    config = cfg(request_timeout_ms=60_000, max_duration_ms=3500)
    outcome = classify(exchange, config)
    assert outcome.reason == "deadline" and "max_duration_ms" in outcome.errors[0]


def test_keep_alives_alone_are_not_progress() -> None:
    clock = FakeClock()

    def tick() -> None:
        clock.now += 1.0

    body = Body([chunk("a")] + [b": keep-alive\n\n"] * 10 + [DONE], on_part=tick)
    client = client_for(lambda r: httpx.Response(200, headers=SSE, stream=body), clock=clock,
                        request_timeout_ms=3500)
    exchange = client.chat(MSGS)
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("read_timeout", "body")
    assert exchange.text == "a" and body.pulled == 5


def test_models_deadline_covers_the_body() -> None:
    clock = FakeClock()
    parts = [b'{"data": [', b'{"id": "a"}', b"]}"]

    def tick() -> None:
        clock.now += 3.0

    body = Body(parts, on_part=tick)
    exchange = client_for(lambda r: httpx.Response(200, json=None, stream=body,
                                                   headers={"content-type": "application/json"}),
                          clock=clock).models(deadline_s=5.0)
    assert exchange.transport_error is not None and exchange.transport_error.kind == "deadline"


# ----------------------------------------------------------------- secrets


CANARY = "sk-canary-5f0c1d2e3a4b5c6d7e8f"
CANARY_EXTRA = "sk-canary-extra-99aa88bb77cc"


def test_canary_never_reaches_an_output(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def echo(request: httpx.Request) -> httpx.Response:
        seen = request.headers.get("authorization", "") + " " + request.headers.get("x-api-key", "")
        if request.url.path.endswith("/models"):
            return httpx.Response(401, headers={"x-echo": seen},
                                  json={"error": {"message": f"bad key {seen}", "type": f"t {seen}", "code": seen}})
        if request.url.path.endswith("/boom"):
            raise httpx.ConnectError(f"could not connect with {seen}")
        text = json.dumps({"choices": [{"delta": {"content": f"you sent {seen} and {CANARY}"}}]})
        body = Body([f"id: {seen}\ndata: {text}\n\n".encode(), f"event: error\ndata: {seen}\n\n".encode()])
        return httpx.Response(200, headers={**SSE, "x-echo": seen}, stream=body)

    for extra in ({}, {"x-api-key": CANARY_EXTRA}):
        config = cfg(auth_token=CANARY, extra_headers=extra)
        client = HermesClient(config, transport=httpx.MockTransport(echo))
        deltas: list[str] = []
        events: list[SSEEventRecord] = []
        exchanges: list[Exchange] = [
            client.chat(MSGS, on_delta=deltas.append, on_event=events.append),
            client.models(),
            client.request("GET", "/boom"),
            client.request("GET", "/models", auth=f"Bearer {CANARY}x"),
        ]
        assert exchanges[0].text and exchanges[1].status == 401 and exchanges[2].transport_error is not None
        outputs = [repr(client), repr(config), str(config), config.model_dump_json(), *deltas,
                   *(e.model_dump_json() for e in events), caplog.text]
        for exchange in exchanges:
            outputs += [repr(exchange), exchange.model_dump_json(), str(exchange.transport_error),
                        repr(classify(exchange, config))]
        blob = "\n".join(outputs)
        assert "sk-canary" not in blob
        assert "<redacted>" in blob


# ----------------------------------------------------------------- real loopback sockets


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


class RawServer:
    """A one-connection HTTP/1.1 server on 127.0.0.1:0 that sends ``head`` (SSE headers), then runs ``script``."""

    def __init__(self, script: Callable[[socket.socket, threading.Event], None], head: bytes = SSE_HEAD) -> None:
        self.head = head
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.release = threading.Event()
        self.script = script
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            conn.sendall(self.head)
            try:
                self.script(conn, self.release)
            except OSError:  # the client hung up: that is the point of these tests
                pass

    def close(self) -> None:
        self.release.set()
        self.thread.join(timeout=10)
        self.sock.close()


def _http_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def chat_over_socket(script: Callable[[socket.socket, threading.Event], None], *, head: bytes = SSE_HEAD,
                     idle_timeout_s: float | None = None, **config: Any) -> tuple[Exchange, HermesProxyRuntimeConfig]:
    """One chat call against a :class:`RawServer` running ``script``; the server is closed afterwards."""
    server = RawServer(script, head=head)
    try:
        conf = cfg(endpoint=f"http://127.0.0.1:{server.port}/v1", **config)
        with HermesClient(conf, idle_timeout_s=idle_timeout_s) as client:
            return client.chat(MSGS), conf
    finally:
        server.close()


@pytest.mark.parametrize("style", ["stall", "trickle"])
def test_max_duration_on_a_real_socket(style: str) -> None:
    def script(conn: socket.socket, release: threading.Event) -> None:
        conn.sendall(_http_chunk(chunk("partial ")))
        if style == "stall":
            release.wait(30)
        else:
            while not release.wait(0.05):
                conn.sendall(_http_chunk(b": keep-alive\n\n"))

    exchange, config = chat_over_socket(script, request_timeout_ms=30_000, max_duration_ms=600)
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("deadline", "body")
    assert exchange.text == "partial "  # "deadline", not read_timeout (silence allowed is 30 s)
    assert classify(exchange, config).reason == "deadline"


def test_response_start_deadline_while_headers_trickle_in() -> None:
    """A server that sends its status line and headers a few bytes at a time never trips httpx's read timeout;
    request_timeout_ms bounds the wait for the response to start all the same."""
    ended: list[str] = []

    def script(conn: socket.socket, release: threading.Event) -> None:
        try:
            for _ in range(400):  # ~20 s at most, so a client without the deadline fails, not hangs
                if release.wait(0.05):
                    ended.append("released")  # the client returned first
                    return
                conn.sendall(b"X-Slow: a\r\n")
            ended.append("server gave up")
        except OSError:
            ended.append("client hung up")

    exchange, config = chat_over_socket(script, head=b"HTTP/1.1 200 OK\r\n", request_timeout_ms=600)
    assert ended and ended[0] != "server gave up"  # the client ended it, long before the server would
    assert exchange.status is None and exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("read_timeout", "headers")
    outcome = classify(exchange, config)
    assert outcome.reason == "read_timeout" and "request timed out after 600 ms" in outcome.errors[0]


def test_a_callers_own_trace_hook_still_sees_the_events_and_is_restored() -> None:
    def script(conn: socket.socket, release: threading.Event) -> None:
        conn.sendall(_http_chunk(chunk("ok", "stop")) + _http_chunk(DONE) + b"0\r\n\r\n")

    server = RawServer(script)
    events: list[str] = []
    try:
        config = cfg(endpoint=f"http://127.0.0.1:{server.port}/v1")
        with HermesClient(config) as client:
            request = client.build_request("POST", "/chat/completions", json={"stream": True}, sse=True)
            hook = request.extensions["trace"] = lambda name, info: events.append(name)
            exchange = client.send(request)
    finally:
        server.close()
    assert exchange.done and exchange.text == "ok"
    assert "connection.connect_tcp.complete" in events
    assert request.extensions["trace"] is hook  # left as it came, so the request can be sent again
    plain = client.build_request("GET", "/models")
    client_for(lambda r: httpx.Response(200, json={"data": []})).send(plain)
    assert "trace" not in plain.extensions


def test_idle_read_timeout_on_a_real_socket() -> None:
    def script(conn: socket.socket, release: threading.Event) -> None:
        conn.sendall(_http_chunk(chunk("stalled ")))
        release.wait(30)

    exchange, config = chat_over_socket(script, idle_timeout_s=0.3, request_timeout_ms=60_000)
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("read_timeout", "body")
    outcome = classify(exchange, config)
    assert (outcome.status, outcome.reason) == ("failed", "read_timeout") and exchange.text == "stalled "


@pytest.mark.skipif(sys.platform != "linux", reason="relies on Linux dropping SYNs when the accept queue is full")
def test_connect_timeout_is_its_own_deadline_on_a_real_socket() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)  # never accepts: once its queue is full, further connects get no answer
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    try:
        config = cfg(endpoint=f"http://127.0.0.1:{port}/v1", request_timeout_ms=60_000)
        with HermesClient(config, connect_timeout_s=0.3, idle_timeout_s=30.0) as client:
            exchange = client.models(deadline_s=30.0)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    assert exchange.transport_error is not None
    assert (exchange.transport_error.kind, exchange.transport_error.phase) == ("connect_timeout", "connect")
    outcome = classify(exchange, config)
    assert (outcome.status, outcome.reason) == ("blocked", "connect_timeout")


def test_connection_refused_on_a_real_socket() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    config = cfg(endpoint=f"http://127.0.0.1:{port}/v1")
    with HermesClient(config) as client:
        exchange = client.models()
    assert exchange.transport_error is not None and exchange.transport_error.kind == "connect_refused"
    outcome = classify(exchange, config)
    assert outcome.status == "blocked" and "hermes proxy start" in outcome.errors[0]


# ----------------------------------------------------------------- details


def test_userinfo_never_reaches_the_request_record() -> None:
    # config rejects an endpoint with user info; a hand-built request still gets it dropped from the record
    client = client_for(lambda r: httpx.Response(200, json={"data": []}))
    exchange = client.send(httpx.Request("GET", "http://user:pw-secret@127.0.0.1:9/v1/models"))
    assert exchange.status == 200
    assert exchange.request.url == "http://127.0.0.1:9/v1/models" and "pw-secret" not in exchange.model_dump_json()


def test_a_verbatim_auth_value_is_redacted_too() -> None:
    client = client_for(lambda r: httpx.Response(401, text=f"got {r.headers['authorization']}"))
    exchange = client.request("GET", "/models", auth="sk-canary-noscheme-123456")
    assert "sk-canary" not in exchange.model_dump_json()


def test_json_error_body_cut_mid_read_is_kept_as_text() -> None:
    body = Body([b'{"error": {"message": "Fai'], exc=httpx.ReadError("[Errno 104] Connection reset by peer"))
    client = client_for(lambda r: httpx.Response(401, headers={"content-type": "application/json"}, stream=body))
    exchange = client.chat(MSGS)
    assert exchange.body_text == '{"error": {"message": "Fai' and exchange.json_body is None
    assert exchange.protocol_errors == [] and exchange.transport_error is not None
    assert exchange.transport_error.phase == "body"
    assert classify(exchange, cfg()).reason == "auth"  # the status still says what happened


def test_oversized_body_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_nb.wire.client as client_module

    monkeypatch.setattr(client_module, "MAX_BODY_BYTES", 8)
    body = Body([b"0123456", b"789abc", b"never read"])
    exchange = client_for(lambda r: httpx.Response(500, headers={"content-type": "text/plain"}, stream=body)).chat(MSGS)
    assert exchange.body_text == "01234567" and body.pulled == 2
    assert exchange.protocol_errors and "larger than 8 bytes" in exchange.protocol_errors[0]


def test_tls_contexts_are_built_once_and_plain_http_trusts_no_certificate() -> None:
    import ssl

    from hermes_nb.wire.client import _tls_context

    assert _tls_context(True) is _tls_context(True) and _tls_context(True).cert_store_stats()["x509_ca"] > 0
    plain = _tls_context(False)
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.cert_store_stats()["x509_ca"] == 0


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["text/event-stream", "application/json", "text/plain", ""]),
       st.sampled_from([200, 401, 404, 429, 500]))
def test_any_body_gives_an_exchange_and_an_outcome(body: bytes, ctype: str, status: int) -> None:
    headers = {"content-type": ctype} if ctype else {}
    client = client_for(lambda r: httpx.Response(status, headers=headers, content=body))
    exchange = client.chat(MSGS)
    assert exchange.status == status
    assert classify(exchange, cfg()).status in ("passed", "failed", "blocked")


def test_deeply_nested_json_body_does_not_crash_the_client() -> None:
    deep = "[" * 900 + "]" * 900
    client = client_for(lambda r: httpx.Response(500, headers={"content-type": "application/json"}, text=deep))
    exchange = client.chat(MSGS)
    assert exchange.status == 500 and exchange.body_text == deep
    assert classify(exchange, cfg()).reason == "http_error"


@pytest.mark.parametrize("kw", [{"auth_token": "sk-canary-tök-123456"}, {"auth_token": "sk-canary-a\nb-123456"},
                                {"extra_headers": {"x-api-key": "sk-canary-café-1234"}}],
                         ids=["non-ascii-token", "line-break-token", "non-ascii-header"])
def test_unsendable_credentials_are_config_errors_not_a_crash_at_send(kw: dict[str, Any]) -> None:
    from hermes_nb import ConfigError
    from hermes_nb.core.config import validate_config

    with pytest.raises(ConfigError) as info:
        validate_config({"model": "m", **kw})
    assert "sk-canary" not in str(info.value)
    with pytest.raises(ValueError) as raw:  # the bare pydantic error does not echo the value either
        HermesProxyRuntimeConfig(model="m", **kw)
    assert "sk-canary" not in str(raw.value)


def test_an_endpoint_with_a_key_in_its_query_is_rejected_without_echoing_it() -> None:
    from hermes_nb import ConfigError
    from hermes_nb.core.config import validate_config

    with pytest.raises(ConfigError, match="query or fragment") as info:
        validate_config({"model": "m", "endpoint": "http://127.0.0.1:9/v1?key=sk-canary-query-1234567"})
    assert "sk-canary" not in str(info.value)


# --------------------------------------------------------------------------- an endpoint alone

def test_an_endpoint_alone_makes_non_chat_calls_and_refuses_chat() -> None:
    from hermes_nb import ConfigError, UsageError

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"object": "list", "data": []} if request.url.path.endswith("models")
                              else {"status": "ok"})

    secret = "sk-endpoint-alone-0123456789"
    with HermesClient("http://127.0.0.1:9/v1/", auth_token=secret, transport=httpx.MockTransport(handler)) as client:
        assert client.endpoint == "http://127.0.0.1:9/v1" and "model" not in repr(client)
        models = client.models(headers={"x-probe": "1"})
        health = client.health()
        other = client.request("GET", "/anything")
        with pytest.raises(UsageError, match="chat needs a runtime config"):
            client.chat(MSGS)
    assert (models.status, health.status, other.status) == (200, 200, 200)
    assert [str(r.url) for r in seen] == ["http://127.0.0.1:9/v1/models", "http://127.0.0.1:9/health",
                                          "http://127.0.0.1:9/v1/anything"]
    assert seen[0].headers["authorization"] == f"Bearer {secret}" and seen[0].headers["x-probe"] == "1"
    assert "authorization" not in seen[1].headers  # /health: the proxy's own route, no bearer
    assert secret not in models.model_dump_json()  # the bearer is known to the client's redactor
    with pytest.raises(ConfigError, match="endpoint"):
        HermesClient("ftp://127.0.0.1/v1")
