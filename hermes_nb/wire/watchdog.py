"""The deadline watchdog of :class:`hermes_nb.client.HermesClient`.

httpx has per-operation timeouts only (connect, read, write, pool): a server
that keeps sending a byte now and then (headers a few bytes at a time, SSE
keep-alive comments with no event) never trips them. The watchdog is one
thread per request that shuts the connection's socket down when its deadline
passes, so the blocked read (or write) wakes up at once and the client records
why. The deadline moves: the client pushes it later on every sign of progress
(:meth:`Watchdog.move`), so it bounds each silence, not a healthy stream, and
an optional overall cap bounds the whole call.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["Watchdog"]


def _socket_of(stream_or_response: Any) -> socket.socket | None:
    stream = stream_or_response
    if isinstance(stream_or_response, httpx.Response):
        stream = stream_or_response.extensions.get("network_stream")
    if stream is not None and hasattr(stream, "get_extra_info"):
        sock = stream.get_extra_info("socket")
        return sock if isinstance(sock, socket.socket) else None
    return None


class Watchdog:
    """Shuts the connection's socket down when ``min(progress deadline, cap)`` passes mid-read (or mid-write).

    Armed with the network stream as soon as the TCP connection exists (httpcore's
    ``connect_tcp`` trace event), else with the response's stream. ``fired`` is
    None until it fires, then ``"idle"`` (no progress in time) or ``"cap"`` (the
    overall cap passed).
    """

    def __init__(self, stream_or_response: Any, *, idle_deadline: float, cap_deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fired: str | None = None
        self.idle_deadline = idle_deadline
        self.cap_deadline = cap_deadline
        self._clock = clock
        self._sock = _socket_of(stream_or_response)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self._sock is not None:
            self._thread = threading.Thread(target=self._run, name="hermes-nb-watchdog", daemon=True)
            self._thread.start()

    def move(self, idle_deadline: float) -> None:
        """Progress: the silence deadline is now ``idle_deadline`` (never earlier than before)."""
        if idle_deadline > self.idle_deadline:
            self.idle_deadline = idle_deadline

    def _due(self) -> tuple[float, str]:
        cap = self.cap_deadline
        if cap is not None and cap <= self.idle_deadline:
            return cap, "cap"
        return self.idle_deadline, "idle"

    def _run(self) -> None:
        while not self._stop.is_set():
            due, why = self._due()
            remaining = due - self._clock()
            if remaining <= 0:
                self._fire(why)
                return
            self._stop.wait(remaining)

    def _fire(self, why: str) -> None:
        self.fired = why
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: nothing to interrupt
                pass

    def cancel(self) -> None:
        self._stop.set()
