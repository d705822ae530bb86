"""The fault matrix: run, check and probe against one scripted loopback server per fault.

One table (``FAULTS``); each row names a fault and the documented classification each job ends in:
``run`` (status/reason of wire/classify.py's table), ``check`` (CheckResult.state) and ``probe``
(WireReport.state). Every row also proves: the job ends within its deadline (a generous bound: this is
not a speed test), ``run`` keeps the partial text that arrived (result and runtime.stdout.log) and writes
its result document, and latest.json and runs/index.json stay valid.

Deadlines are explicit in every row's config (``request_timeout_ms`` small, check ``deadline_s``, probe
``deadline_s``/``request_deadline_s``), so a row holds whether ``request_timeout_ms`` is an overall
deadline or a time-to-first-byte + idle one. Nothing leaves loopback: the unresolvable host is
``nonexistent.invalid`` (RFC 6761: never resolves; ``getaddrinfo`` answers for ``.invalid`` without asking
a resolver here), and the redirect points at a second loopback listener that must see no connection.
"""

from __future__ import annotations

import gzip
import json
import select
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_nb import check
from hermes_nb.core.config import validate_config
from hermes_nb.harness.artifacts import LatestRun, RunsIndex, validate_result
from hermes_nb.harness.mission import Mission
from hermes_nb.harness.run import run
from hermes_nb.proxy.probe import probe

MODEL = "nousresearch/hermes-4-405b"
TOKEN = "sk-fault-matrix-0123456789abcdef"
SENTINEL = "\n```uh-runtime-final-message\nFault matrix answer.\n```\n"
DELTAS = ["The fault ", "matrix keeps ", "this partial ", "text.", SENTINEL]
PARTIAL = "The fault matrix keeps "  # what arrives before a mid-stream fault (the first two deltas)


# ----------------------------------------------------------------- the scripted server


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def streamed(self) -> bool:
        try:
            return bool(json.loads(self.body or b"{}").get("stream"))
        except ValueError:
            return False


def _chunk(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    obj = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 1764680000, "model": MODEL,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def sse_parts() -> list[bytes]:
    """The normal streamed answer: one frame per delta, a finish chunk, [DONE]."""
    return [_chunk(d) for d in DELTAS] + [_chunk(None, "stop"), b"data: [DONE]\n\n"]


def normal(req: Request) -> tuple[int, str, list[bytes]]:
    """(status, content type, body parts) a healthy proxy would answer."""
    if req.path.endswith("/chat/completions"):
        if req.streamed:
            return 200, "text/event-stream", sse_parts()
        body = {"id": "chatcmpl-fault", "object": "chat.completion", "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(DELTAS)},
                             "finish_reason": "stop"}]}
        return 200, "application/json", [json.dumps(body).encode()]
    if req.path.endswith("/models"):
        return 200, "application/json", [json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode()]
    if req.path == "/health":
        return 200, "application/json", [b'{"status": "ok"}']
    envelope = {"error": {"message": f"no route {req.path}", "type": "invalid_request_error", "code": "not_found"}}
    return 404, "application/json", [json.dumps(envelope).encode()]


def head(status: int, ctype: str, extra: dict[str, str] | None = None, length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Fault'}", f"Content-Type: {ctype}",
             "Connection: close", "Server: fault-matrix"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Conn:
    """One accepted connection: send bytes, reset, stall until the client leaves or the server stops."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock, self.stop = sock, stop

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self, status: int, ctype: str, parts: list[bytes], extra: dict[str, str] | None = None) -> None:
        body = b"".join(parts)
        self.send(head(status, ctype, extra, len(body)) + body)

    def reset(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def stall(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if ready and not self.sock.recv(65536):
                return  # the client gave up


Script = Callable[[Conn, Request], None]


class FaultServer:
    """HTTP/1.1 on 127.0.0.1:0 (or TLS with ``tls``): every request gets ``script``; a thread per connection."""

    def __init__(self, script: Script, *, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self.script, self.tls = script, tls
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.host = host
        self.stop = threading.Event()
        self.requests: list[Request] = []
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}/v1"

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(sock,), daemon=True).start()

    def _handle(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(10)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                more = sock.recv(65536)
                if not more:
                    return
                if not data and more[:1] == b"\x16":  # a TLS ClientHello on a plain-http port: aiohttp's answer
                    sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                data += more
            raw_head, _, body = data.partition(b"\r\n\r\n")
            lines = raw_head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            while len(body) < int(headers.get("content-length", "0")):
                more = sock.recv(65536)
                if not more:
                    return
                body += more
            req = Request(method, path, headers, body)
            self.requests.append(req)
            self.script(Conn(sock, self.stop), req)
        except (OSError, ssl.SSLError, ValueError):
            pass  # the client hung up or refused the handshake: that is the point of the faults
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.listener.close()


# ----------------------------------------------------------------- the faults


def ok(conn: Conn, req: Request) -> None:
    status, ctype, parts = normal(req)
    conn.answer(status, ctype, parts)


def reset_before_headers(conn: Conn, req: Request) -> None:
    conn.reset()


def _mid_stream(conn: Conn, req: Request) -> list[bytes]:
    """Headers and the first two deltas of the answer (or half of a JSON body); returns what is left."""
    status, ctype, parts = normal(req)
    if ctype == "text/event-stream":
        conn.send(head(status, ctype) + b"".join(parts[:2]))
        return parts[2:]
    body = b"".join(parts)
    conn.send(head(status, ctype, length=len(body)) + body[: len(body) // 2])
    return [body[len(body) // 2:]]


def reset_mid_stream(conn: Conn, req: Request) -> None:
    _mid_stream(conn, req)
    conn.stop.wait(0.2)  # the fault's own timing: the client reads what was sent, then the reset arrives
    conn.reset()


def stall_before_headers(conn: Conn, req: Request) -> None:
    conn.stall()


def stall_mid_stream(conn: Conn, req: Request) -> None:
    _mid_stream(conn, req)
    conn.stall()


def slow_drip(conn: Conn, req: Request) -> None:
    """The whole answer, 64 bytes every 5 ms: far within any idle deadline, done well before the overall one."""
    status, ctype, parts = normal(req)
    data = head(status, ctype) + b"".join(parts)
    for i in range(0, len(data), 64):
        conn.send(data[i : i + 64])
        conn.stop.wait(0.005)


def truncated(conn: Conn, req: Request) -> None:
    _mid_stream(conn, req)  # then a clean close: no finish_reason, no [DONE]


def oversized(conn: Conn, req: Request) -> None:
    """17 MB of JSON: more than the client keeps (16 MB) and than any proxy answer."""
    filler = b"x" * (1 << 20)
    conn.send(head(200, "application/json", length=17 * len(filler) + 10) + b'{"data": "')
    for _ in range(17):
        conn.send(filler)
    conn.send(b'"}')


NGINX_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway"
             b"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def html_error(conn: Conn, req: Request) -> None:
    conn.answer(502, "text/html", [NGINX_502])


def text_error(conn: Conn, req: Request) -> None:
    conn.answer(500, "text/plain; charset=utf-8", [b"500 Internal Server Error\n\nServer got itself in trouble"])


def gzip_encoded(conn: Conn, req: Request) -> None:
    status, ctype, parts = normal(req)
    conn.answer(status, ctype, [gzip.compress(b"".join(parts))], {"Content-Encoding": "gzip"})


def non_utf8(conn: Conn, req: Request) -> None:
    """Latin-1 bytes (not UTF-8) inside the JSON strings: decoded with U+FFFD, never a crash."""
    status, ctype, parts = normal(req)
    conn.answer(status, ctype, [p.replace(b"fault", b"fa\xfclt\xff") for p in parts])


def local_only_guard(conn: Conn, req: Request) -> None:
    """hermes-agent 0.22's guard refusing the request's Host on every route, /health included."""
    body = {"error": {"message": "Request refused: browser requests and foreign Host names are not accepted by "
                                 "this proxy.", "type": "host_not_allowed", "code": "host_not_allowed"}}
    conn.answer(403, "application/json", [json.dumps(body).encode()])


def dead_upstream(conn: Conn, req: Request) -> None:
    """The proxy is up (its /health answers) and answers its own 502 for everything it forwards."""
    if req.path == "/health":
        conn.answer(200, "application/json", [b'{"status": "ok", "upstream": "Nous Portal"}'])
        return
    body = {"error": {"message": "upstream connection failed: Cannot connect to host inference-api.nousresearch.com"
                                 ":443", "type": "upstream_unreachable", "code": "upstream_unreachable"}}
    conn.answer(502, "application/json", [json.dumps(body).encode()])


def empty_200(conn: Conn, req: Request) -> None:
    _, ctype, _ = normal(req)
    conn.answer(200, ctype, [])


# ----------------------------------------------------------------- the table


@dataclass
class Fault:
    name: str
    script: Script | None  # None: no server (refused, unresolvable)
    run: tuple[str, set[str]]  # status, documented reasons (a timeout may read as either)
    check: set[str]
    probe: set[str]
    partial: bool = False  # run keeps PARTIAL
    text: str | None = None  # run's whole text, when it passes
    deadline_s: float = 3.0  # generous bound of each job: deadlines below plus start-up
    extra: dict[str, Any] = field(default_factory=dict)
    scale: float = 1.0  # the jobs' deadlines times this (a stall waits each one out: shorter ones show the same)


TIMEOUTS = {"read_timeout", "deadline"}
FAULTS = [
    Fault("connection refused", None, ("blocked", {"unreachable"}), {"unreachable"}, {"unreachable"}),
    Fault("unresolvable host", None, ("failed", {"dns"}), {"misconfigured"}, {"unreachable"}),
    Fault("reset before headers", reset_before_headers, ("failed", {"stream_broken"}), {"error"}, {"unreachable"}),
    Fault("reset mid-stream", reset_mid_stream, ("failed", {"stream_broken"}), {"error"}, {"unknown"},
          partial=True),
    Fault("stall before headers", stall_before_headers, ("failed", TIMEOUTS), {"unreachable"}, {"unreachable"},
          scale=0.4),
    Fault("stall mid-stream", stall_mid_stream, ("failed", TIMEOUTS), {"slow"}, {"unknown"}, partial=True, scale=0.4),
    Fault("slow drip within the idle deadline", slow_drip, ("passed", {"ok"}), {"ready"}, {"live"},
          text="".join(DELTAS)),
    Fault("truncated stream", truncated, ("failed", {"truncated"}), {"error"}, {"unknown"}, partial=True),
    Fault("oversized body", oversized, ("failed", {"protocol_error"}), {"error"}, {"unknown"}),
    Fault("HTML error page", html_error, ("failed", {"http_error"}), {"error"}, {"unknown"}),
    Fault("text/plain error", text_error, ("failed", {"http_error"}), {"error"}, {"unknown"}),
    Fault("gzip-encoded stream", gzip_encoded, ("passed", {"ok"}), {"ready"}, {"live"}, text="".join(DELTAS)),
    Fault("non-UTF-8 bytes", non_utf8, ("passed", {"ok"}), {"ready"}, {"live"},
          text="".join(DELTAS).replace("fault", "fa\ufffdlt\ufffd")),
    Fault("redirect to another host (not followed)", None, ("failed", {"http_error"}), {"error"}, {"unknown"}),
    Fault("TLS endpoint with a bad certificate", ok, ("failed", {"unreachable"}), {"error"}, {"unreachable"}),
    Fault("200 with an empty body", empty_200, ("failed", {"empty"}), {"error"}, {"unknown"}),
    Fault("the local-only guard refuses the Host", local_only_guard, ("blocked", {"host_not_allowed"}),
          {"not_local"}, {"not_local"}),
    Fault("a dead upstream behind a live proxy", dead_upstream, ("failed", {"upstream_unreachable"}), {"error"},
          {"unknown"}),
    Fault("https to the proxy's plain-http port", ok, ("failed", {"unreachable"}), {"misconfigured"},
          {"unreachable"}),
]

#: the one action every job gives for the same answer (run's hint, check's hint, probe's action)
ACTIONS = {
    "connection refused": "hermes proxy start",
    "the local-only guard refuses the Host": "http://127.0.0.1:",
    "https to the proxy's plain-http port": "use http://127.0.0.1:",
    "a dead upstream behind a live proxy": "its upstream",
}


@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``.invalid`` never resolves (RFC 6761): answer so here, without a query leaving the machine."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.rstrip(".").lower().endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def bad_cert_tls() -> ssl.SSLContext:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()  # never trusted by the client: the certificate cannot be verified
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


@pytest.fixture
def endpoint_for(no_dns: None,
                 bad_cert_tls: ssl.SSLContext) -> Iterator[Callable[[Fault], tuple[str, list[FaultServer]]]]:
    servers: list[FaultServer] = []

    def make(fault: Fault) -> tuple[str, list[FaultServer]]:
        if fault.name == "connection refused":
            return f"http://127.0.0.1:{_refused_port()}/v1", []
        if fault.name == "unresolvable host":
            return "http://nonexistent.invalid:8645/v1", []
        if fault.name.startswith("https"):
            server = FaultServer(ok)
            servers.append(server)
            return server.endpoint.replace("http://", "https://"), [server]
        if fault.name.startswith("redirect"):
            elsewhere = FaultServer(ok, host="127.0.0.2")  # another host (still loopback): must see nothing

            def redirect(conn: Conn, req: Request) -> None:
                conn.answer(307, "text/plain", [b"moved"], {"Location": f"http://127.0.0.2:{elsewhere.port}{req.path}"})

            server = FaultServer(redirect)
            servers.extend([server, elsewhere])
            return server.endpoint, [server, elsewhere]
        tls = bad_cert_tls if fault.name.startswith("TLS") else None
        assert fault.script is not None
        server = FaultServer(fault.script, tls=tls)
        servers.append(server)
        return server.endpoint, [server]

    yield make
    for server in servers:
        server.close()


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    value = fn()
    return value, time.monotonic() - start


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault_matrix(fault: Fault, endpoint_for: Any, tmp_path: Path) -> None:
    endpoint, servers = endpoint_for(fault)
    config = validate_config({"endpoint": endpoint, "model": MODEL, "auth_token": TOKEN,
                              "request_timeout_ms": round(800 * fault.scale), **fault.extra})

    # run: documented classification, in time, partial text kept, documents written and valid
    result, took = _timed(lambda: run(Mission.adhoc("fault matrix"), config, root=tmp_path, handle_signals=False,
                                      sandbox=False))
    status, reasons = fault.run
    assert (result.status, result.outcome.reason) in {(status, r) for r in reasons}, result.result["errors"]
    assert took < fault.deadline_s + 2.0
    run_dir = result.run_dir
    doc = yaml.safe_load((run_dir / "runtime-result.yaml").read_text())
    validate_result(doc)
    assert doc["status"] == result.status
    mission_dir = run_dir.parents[1]
    latest = LatestRun.model_validate_json((mission_dir / "latest.json").read_text())
    index = RunsIndex.model_validate_json((mission_dir / "runs" / "index.json").read_text())
    assert latest.run_id == result.run_id and latest.status == result.status
    assert [r.run_id for r in index.runs] == [result.run_id]
    stdout = (run_dir / "runtime.stdout.log").read_text()
    if fault.partial:
        assert result.text.startswith(PARTIAL) and stdout.startswith(PARTIAL)
        assert any(f"{len(PARTIAL)} characters of partial text kept" in e for e in doc["errors"])
    if fault.text is not None:
        assert result.text == fault.text == stdout
    if result.status != "passed":
        assert doc["errors"], "a failed run says why"
    if fault.name.startswith("TLS"):
        assert "certificate" in " ".join(doc["errors"]).lower()

    # check: the adapter check's state, in time
    checked, took = _timed(lambda: check(config, budget_s=0.8 * fault.scale))
    assert checked.state in fault.check, checked.errors
    assert took < fault.deadline_s
    if checked.state != "ready":
        assert checked.errors

    # probe: never raises, its whole deadline bounds it
    report, took = _timed(lambda: probe(endpoint, auth_token=TOKEN, model=MODEL, budget_s=2.0 * fault.scale,
                                        request_budget_s=0.5 * fault.scale))
    assert report.state in fault.probe, (report.state, report.warnings)
    assert took < 2.0 + fault.deadline_s

    # one reading: the same action from every job for the same answer
    if fault.name in ACTIONS:
        if fault.name.startswith("a dead upstream"):
            from hermes_nb.proxy.contracts import apply_contract, load_contract, resolve_contract

            apply_contract(report, load_contract(resolve_contract("hermes-agent-0.19.0")))
        actions = (result.outcome.hint, checked.hint, report.action)
        assert all(a is not None and ACTIONS[fault.name] in a for a in actions), actions

    if fault.name.startswith("redirect"):
        origin, elsewhere = servers
        assert origin.requests and elsewhere.connections == 0 and not elsewhere.requests
        assert {r.status for r in report.routes if r.status is not None} == {307}
