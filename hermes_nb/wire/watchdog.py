"""The overall-deadline watchdog of :class:`hermes_nb.client.HermesClient`.

httpx has per-operation timeouts only (connect, read, write, pool): a server
that keeps sending a byte now and then never trips them. The watchdog is a
timer that shuts the connection's socket down when the overall deadline
passes, so the blocked read (or write) wakes up at once and the client records
a ``deadline`` failure.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx

from hermes_nb.wire.timers import TimerHandle, call_later

__all__ = ["Watchdog"]


class Watchdog:
    """Shuts the connection's socket down when the overall deadline passes mid-read (or mid-write).

    Armed with the network stream as soon as the TCP connection exists (httpcore's
    ``connect_tcp`` trace event), so a server trickling its status line and headers
    cannot outlast the deadline either; else with the response's stream.
    """

    def __init__(self, stream_or_response: Any, remaining_s: float) -> None:
        self.fired = False
        self._sock: socket.socket | None = None
        stream = stream_or_response
        if isinstance(stream_or_response, httpx.Response):
            stream = stream_or_response.extensions.get("network_stream")
        if stream is not None and hasattr(stream, "get_extra_info"):
            sock = stream.get_extra_info("socket")
            self._sock = sock if isinstance(sock, socket.socket) else None
        self._timer: TimerHandle | None = None
        if self._sock is not None:  # one shared timer thread, not a thread per request (P2)
            self._timer = call_later(remaining_s, self._fire)

    def _fire(self) -> None:
        self.fired = True
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: nothing to interrupt
                pass

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
