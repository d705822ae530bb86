"""Serving the emulator on loopback, on an event loop of its own in a thread (so it works the same inside a Jupyter
kernel, whose main thread runs a loop): :func:`serve_emulator` hands back a handle, :func:`run` serves in the
foreground until Ctrl-C or SIGTERM (``hermes-nb emulator``, ``python -m hermes_nb.emulator``)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hermes_nb.core.errors import ConfigError, ProxyUnreachable
from hermes_nb.core.model import EndpointHandle

from .app import RecordedRequest, create_app, logger
from .scenarios import EmulatorSpec


class _ServerThread(threading.Thread):
    """An aiohttp app served on a listening socket, on an event loop of its own."""

    def __init__(self, app: web.Application, sock: socket.socket) -> None:
        # the port in the name: log records say which emulator wrote them
        super().__init__(name=f"hermes-nb-emulator-{sock.getsockname()[1]}", daemon=True)
        self.app, self.sock = app, sock
        self.loop = asyncio.new_event_loop()
        self.stopping = asyncio.Event()

    def run(self) -> None:
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            await web.SockSite(runner, self.sock).start()
            await self.stopping.wait()
        finally:
            await runner.cleanup()

    def shutdown(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: stopped already
            self.loop.call_soon_threadsafe(self.stopping.set)
        self.join(10.0)


class EmulatorHandle(EndpointHandle):
    """A running emulator: the string value is the endpoint (``http://127.0.0.1:<port>/v1``); ``with`` closes it."""

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
        """What the emulator received so far (a snapshot)."""
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


def serve_emulator(*, port: int = 0, **options: Any) -> EmulatorHandle:
    """Start an emulator now, on a free loopback port unless ``port`` names one; ``options`` are
    :class:`~hermes_nb.emulator.scenarios.EmulatorSpec`'s (``profile``, ``scenario``, ``seed``, ``models``,
    ``provider``, ``delay_s``, ``retry_after``…; ValueError for a bad one, a host that is not loopback included).
    :class:`~hermes_nb.core.errors.ProxyUnreachable` when it cannot listen."""
    spec = EmulatorSpec.of(port=port, **options)
    family = socket.AF_INET6 if ":" in spec.host else socket.AF_INET
    try:  # listening before the thread starts: a request that comes first waits in the backlog
        sock = socket.create_server((spec.host, port), family=family, reuse_port=spec.reuse_port)
    except OSError as exc:
        raise ProxyUnreachable(f"emulator could not listen on {spec.host}:{port}: {exc.strerror or exc}") from exc
    log: list[RecordedRequest] = []
    thread = _ServerThread(create_app(spec, requests=log), sock)
    thread.start()
    bound = sock.getsockname()[1]
    base_url = f"http://[{spec.host}]:{bound}" if ":" in spec.host else f"http://{spec.host}:{bound}"
    handle = EmulatorHandle(f"{base_url}/v1", base_url=base_url, host=spec.host, port=bound, profile=spec.profile,
                            scenario=spec.scenario, seed=spec.seed, provider=spec.provider, _log=log, _thread=thread)
    atexit.register(handle.close)
    return handle


def run(spec: EmulatorSpec, *, line: Callable[[str], None], emit: Callable[[dict[str, Any]], None],
        info: Callable[[str], None]) -> int:
    """Serve until Ctrl-C/SIGTERM (exit 0): ``line`` gets the endpoint first, ``emit`` the JSON description,
    ``info`` progress; one log line per request goes to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("hermes-nb emulator: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # both raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with serve_emulator(**spec.model_dump()) as emu:
            line(emu.endpoint)
            emit({"endpoint": emu.endpoint, "base_url": emu.base_url, "port": emu.port, "profile": spec.profile,
                  "provider": spec.provider, "scenario": spec.scenario, "seed": spec.seed, "models": list(spec.listed)})
            info(f"hermes-nb emulator: {spec.profile} profile ({spec.provider}), scenario {spec.scenario}, "
                 f"seed {spec.seed}; Ctrl-C to stop")
            try:
                emu._thread.join()
            except KeyboardInterrupt:
                info("hermes-nb emulator: stopping")
    except ProxyUnreachable as exc:  # the port named is taken: a usage error here
        reason = getattr(exc.__cause__, "strerror", None) or exc
        raise ConfigError(f"cannot listen on {spec.host}:{spec.port}: {reason}") from exc
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        logger.removeHandler(handler)
    return 0
