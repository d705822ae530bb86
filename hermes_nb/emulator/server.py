"""``serve()``: the emulator on a free loopback port, in a background thread with its own event loop.

The thread owns a fresh asyncio loop, so ``serve()`` works the same from plain
Python and from inside a Jupyter kernel (whose main thread already runs a loop).
Readiness is a :class:`threading.Event` set once the socket listens; shutdown
sets the app's closing event (stalled streams end), then cleans the runner up.
"""

from __future__ import annotations

import asyncio
import atexit
import socket
import threading
import time

from aiohttp import web

from hermes_nb.core.errors import ProxyTimeout, ProxyUnreachable
from hermes_nb.core.facts import is_loopback_host
from hermes_nb.core.model import EndpointHandle

from .app import RecordedRequest, create_app

__all__ = ["EmulatorHandle", "serve_emulator", "listen", "endpoint_of_socket"]

_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 10.0



class _ServerThread(threading.Thread):
    def __init__(self, app: web.Application, host: str, port: int, sock: socket.socket | None = None) -> None:
        super().__init__(name="hermes-nb-emulator", daemon=True)
        self._app = app
        self._host = host
        self._port = port
        self._sock = sock
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.bound_port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None

    def run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # thread edge: handed to the caller of serve(), which re-raises it
            self.error = exc
        finally:
            self.ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stop_event = asyncio.Event()
        runner = web.AppRunner(self._app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            site: web.BaseSite = (web.SockSite(runner, self._sock) if self._sock is not None
                                  else web.TCPSite(runner, host=self._host, port=self._port))
            await site.start()
            self.bound_port = int(runner.addresses[0][1])
            self.name = f"hermes-nb-emulator-{self.bound_port}"  # log records say which emulator wrote them
            self.ready.set()
            await self._stop_event.wait()
        finally:
            await runner.cleanup()

    def shutdown(self) -> None:
        loop, stop = self._loop, self._stop_event
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # loop closed between the check and the call
                pass
        self.join(_STOP_TIMEOUT_S)


class EmulatorHandle(EndpointHandle):
    """A running emulator. The string value is the endpoint (``http://127.0.0.1:<port>/v1``).

    ``with serve() as emu:`` (or ``emu = serve(); …; emu.close()``):
    ``emu.endpoint``, ``emu.base_url``, ``emu.port``, ``emu.requests`` (a snapshot list of
    :class:`~hermes_nb.emulator.app.RecordedRequest`), ``emu.clear()``, ``emu.wait_for_requests(n)``.
    """

    endpoint: str
    base_url: str
    host: str
    port: int
    profile: str
    scenario: str
    seed: int
    #: what the proxy profiles front (``nous``, ``xai``)
    provider: str
    _log: list[RecordedRequest]
    _thread: _ServerThread

    def __repr__(self) -> str:
        return f"EmulatorHandle({self.endpoint!r}, profile={self.profile!r}, scenario={self.scenario!r})"

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self._log)

    def clear(self) -> None:
        self._log.clear()

    def wait_for_requests(self, count: int, *, timeout: float = 5.0) -> list[RecordedRequest]:
        """Poll (with a deadline) until ``count`` requests have finished; return them."""
        deadline = time.monotonic() + timeout
        while True:
            done = [r for r in self._log if r.status is not None]
            if len(done) >= count or time.monotonic() >= deadline:
                return done
            time.sleep(0.01)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop the server (idempotent); stalled streams are ended."""
        self._thread.shutdown()
        atexit.unregister(self.close)

    def __enter__(self) -> EmulatorHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listen(host: str = "127.0.0.1") -> socket.socket:
    """A listening socket on a free loopback port, for :func:`serve`'s ``sock`` (ValueError for another host)."""
    _check_loopback(host)
    return socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)


def endpoint_of_socket(sock: socket.socket) -> str:
    """The emulator endpoint (``http://<host>:<port>/v1``) a :func:`listen` socket will serve."""
    host, port = sock.getsockname()[:2]
    return f"{_base_url(host, port)}/v1"


def _check_loopback(host: str) -> None:
    if not is_loopback_host(host):
        raise ValueError(f"emulator host {host!r} is not a loopback address (127.0.0.1, ::1, localhost)")


def _base_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve_emulator(
    *,
    profile: str = "hermes-agent",
    scenario: str = "ok",
    seed: int = 0,
    models: list[str] | tuple[str, ...] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    delay_s: float = 0.05,
    retry_after: int = 2,
    first_delta_s: float = 0.1,
    token_interval_s: float = 0.01,
    max_concurrent: int = 4,
    provider: str = "nous",
    first_byte_s: float = 6.0,
    answer_s: float = 25.0,
    reasoning_tokens: int = 0,
    stall_s: float = 0.0,
    trailer_s: float = 0.0,
    local_only: bool = False,
    sock: socket.socket | None = None,
) -> EmulatorHandle:
    """Start an emulator now; returns a handle that is also a context manager (``with serve() as emu:``).

    ``host`` must be a loopback address (ValueError otherwise): the emulator is never exposed. Raises
    :class:`~hermes_nb.core.errors.ProxyUnreachable` when it cannot listen (port taken, address missing) and
    :class:`~hermes_nb.core.errors.ProxyTimeout` when it is not listening within 15 s.

    ``sock``: serve on this listening socket (``host`` and ``port`` are its own; see :func:`listen`), so the
    endpoint can be handed out before the emulator starts: a client connecting meanwhile waits in its backlog.
    """
    if sock is not None:
        host, port = sock.getsockname()[:2]
    _check_loopback(host)
    log: list[RecordedRequest] = []
    app = create_app(profile=profile, scenario=scenario, seed=seed, models=models, delay_s=delay_s,
                     retry_after=retry_after, first_delta_s=first_delta_s, token_interval_s=token_interval_s,
                     max_concurrent=max_concurrent, requests=log, provider=provider, first_byte_s=first_byte_s,
                     answer_s=answer_s, reasoning_tokens=reasoning_tokens, stall_s=stall_s, trailer_s=trailer_s,
                     local_only=local_only)
    thread = _ServerThread(app, host, port, sock)
    thread.start()
    if not thread.ready.wait(_START_TIMEOUT_S):
        thread.shutdown()
        raise ProxyTimeout(f"emulator did not start listening on {host}:{port} within {_START_TIMEOUT_S:.0f}s")
    if thread.error is not None or thread.bound_port is None:
        thread.join(_STOP_TIMEOUT_S)
        err = thread.error
        reason = getattr(err, "strerror", None) or err or "no port bound"
        raise ProxyUnreachable(f"emulator could not listen on {host}:{port}: {reason}") from err
    base_url = _base_url(host, thread.bound_port)
    handle = EmulatorHandle(f"{base_url}/v1", base_url=base_url, host=host, port=thread.bound_port,
                            profile=profile, scenario=scenario, seed=seed, provider=provider, _log=log,
                            _thread=thread)
    atexit.register(handle.close)
    return handle
