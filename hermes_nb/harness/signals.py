"""SIGINT/SIGTERM/SIGHUP during a run: cancel the request, never lose the run's documents.

:class:`SignalGuard` installs the handlers for a run's whole life cycle (main
thread only; the previous handlers come back after). While ``armed`` (the
request is in flight) a signal raises :class:`Cancelled` out of the client
call; otherwise it is remembered (``pending``) and the run finishes normally.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

TYPE_CHECKING = False  # typing is not imported: the CLI installs its handlers through this module at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SIGNAL_NAMES", "Cancelled", "SignalGuard", "INTERRUPTED"]

#: SIGHUP too: a closed terminal must not leave latest.json "running"
SIGNAL_NAMES: dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
#: set once a guard has seen a signal: the CLI's own SIGINT handler then ignores later ones (one Ctrl-C is
#: enough; a second one must not change the exit code the run already decided)
INTERRUPTED = threading.Event()


class Cancelled(BaseException):
    """Raised from a signal handler to abort the request (never escapes the runner)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """SIGINT/SIGTERM handlers for the duration of a run (main thread only; restored after)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.armed = False
        self.pending: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        INTERRUPTED.set()
        if self.armed:
            self.armed = False
            raise Cancelled(signum)
        self.pending = signum

    def arm(self) -> None:
        self.armed = True
        if self.pending is not None:
            self.armed = False
            raise Cancelled(self.pending)

    def __enter__(self) -> SignalGuard:
        if self.enabled:
            for signum in SIGNAL_NAMES:
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
