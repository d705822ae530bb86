"""The deadlines of :class:`hermes_nb.wire.client.HermesClient` calls, and their watchdog.

Deadlines that fit streaming (issue 10):

* ``connect`` (5 s): opening the TCP connection;
* ``request_timeout_ms`` bounds every *silence*: the wait for the response to
  start (headers, even when they trickle in a few bytes at a time) and each
  gap between signs of progress after that (an SSE event; SSE comments and
  keep-alives are not progress; any bytes of a non-SSE body). A healthy stream
  that keeps sending may run longer than ``request_timeout_ms``;
* ``max_duration_ms`` (optional, off by default; per-call ``deadline_s`` for
  probes and ``/models``): an overall cap that also cuts a healthy stream.

httpx has per-operation timeouts only (connect, read, write, pool): its read
timeout catches plain silence, but a server that keeps sending a byte now and
then (headers a few bytes at a time, keep-alive comments with no event) never
trips them. The watchdog is a timer on one shared thread (``wire/timers.py``, not a
thread per request) that shuts the connection's socket down when the silence deadline (moved on every sign of progress,
:meth:`Watchdog.move`) or the cap passes, so the blocked read (or write) wakes
up at once and the client records why.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from hermes_nb.core.records import TransportFailure, TransportKind, TransportPhase
from hermes_nb.wire.timers import TimerHandle, call_later

__all__ = ["Watchdog", "Deadlines"]


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
        self._cancelled = False
        self._timer: TimerHandle | None = None
        if self._sock is not None:  # one shared timer thread, not a thread per request (P2)
            self._schedule()

    def move(self, idle_deadline: float) -> None:
        """Progress: the silence deadline is now ``idle_deadline`` (never earlier than before)."""
        if idle_deadline > self.idle_deadline:
            self.idle_deadline = idle_deadline

    def _due(self) -> tuple[float, str]:
        cap = self.cap_deadline
        if cap is not None and cap <= self.idle_deadline:
            return cap, "cap"
        return self.idle_deadline, "idle"

    def _schedule(self) -> None:
        due, _ = self._due()
        self._timer = call_later(due - self._clock(), self._check)

    def _check(self) -> None:
        """On the timer thread: fire if the deadline is due, else wait again (progress moved it later)."""
        if self._cancelled:
            return
        due, why = self._due()
        if due - self._clock() <= 0:
            self._fire(why)
        else:
            self._schedule()

    def _fire(self, why: str) -> None:
        self.fired = why
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: nothing to interrupt
                pass

    def cancel(self) -> None:
        self._cancelled = True
        if self._timer is not None:
            self._timer.cancel()


class Deadlines:
    """The deadlines of one call: the longest silence (``wait``, from the start and from each sign of
    progress) and the optional overall ``cap``; owns the call's :class:`Watchdog`."""

    def __init__(self, *, wait: float, cap: float | None, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.cap = cap
        self.wait = wait if cap is None else min(wait, cap)
        self.t0 = clock()
        self.cap_deadline = None if cap is None else self.t0 + cap
        self.last_progress = self.t0
        self.watchdog: Watchdog | None = None

    def arm(self, stream_or_response: Any) -> None:
        """Start the watchdog on this connection (once)."""
        if self.watchdog is None:
            self.watchdog = Watchdog(stream_or_response, idle_deadline=self.last_progress + self.wait,
                                     cap_deadline=self.cap_deadline, clock=self.clock)

    @property
    def fired(self) -> str | None:
        return None if self.watchdog is None else self.watchdog.fired

    def progress(self, now: float) -> None:
        """A sign of progress: the next silence is measured from ``now``."""
        self.last_progress = now
        if self.watchdog is not None:
            self.watchdog.move(now + self.wait)

    def capped(self, now: float) -> bool:
        return self.cap_deadline is not None and now >= self.cap_deadline

    def silent(self, now: float) -> bool:
        return now - self.last_progress >= self.wait

    def failure(self, kind: TransportKind, phase: TransportPhase, exception: str | None = None) -> TransportFailure:
        """``deadline`` (the cap passed) or ``read_timeout`` (a silence longer than ``wait``)."""
        if kind == "deadline":
            msg = f"overall cap of {self.cap:g} s passed"
        else:
            where = "for the response to start" if phase == "headers" else "between signs of progress"
            msg = f"no progress for {self.wait:g} s (the longest wait allowed {where})"
        return TransportFailure(kind=kind, phase=phase, message=msg, exception=exception)

    def cancel(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
