"""One state machine for the console's request: what the answer box, the status line and the buttons show.

    idle ─begin→ sending ─delta→ streaming ─finish→ done | failed | blocked | stopped
      ↑                                                  │
      └────────────── begin (a new request) ─────────────┘        select(entry): a finished entry's own view

Every request gets a generation number from :meth:`RequestState.begin`; a delta or an end that carries an
older generation is ignored, so nothing outlives its request (a late callback can never bring back
"sending…" or an old answer). Stop is enabled exactly while a request runs (sending or streaming), Send
exactly while none does. A new request clears the previous answer, usage and table. The status names the
verdict (a failed request never says "done"). Selecting a history entry shows *that* entry's answer,
usage and table. Transitions hold one lock and every :meth:`snapshot` is consistent, so the widgets can be
set from any thread. Pure: tested without a browser (tests/kit/test_console.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING

from hermes_nb.core.errors import ConfigError
from hermes_nb.core.records import Usage

if TYPE_CHECKING:
    from hermes_nb.kit.exchanges import HistoryEntry

__all__ = ["IDLE", "SENDING", "STREAMING", "DONE", "FAILED", "BLOCKED", "STOPPED", "RUNNING", "ENDED",
           "View", "RequestState", "phase_of", "status_of"]

IDLE, SENDING, STREAMING = "idle", "sending", "streaming"
DONE, FAILED, BLOCKED, STOPPED = "done", "failed", "blocked", "stopped"
RUNNING = frozenset({SENDING, STREAMING})
ENDED = frozenset({DONE, FAILED, BLOCKED, STOPPED})
#: an entry's verdict → the phase it ends in
_PHASE = {"passed": DONE, "failed": FAILED, "blocked": BLOCKED, "stopped": STOPPED}


def phase_of(entry: HistoryEntry | None) -> str:
    return FAILED if entry is None else _PHASE.get(entry.verdict, FAILED)


def status_of(phase: str, entry: HistoryEntry | None = None, error: str | None = None) -> str:
    """The status line: ``sending…``, ``done: passed (ok)``, ``failed: unreachable``, ``stopped: partial text kept``."""
    if phase in RUNNING:
        return f"{phase}…"
    if phase == STOPPED:
        return "stopped: partial text kept"
    if phase == IDLE:
        return IDLE
    if entry is None:
        return f"{phase}: {error or 'no exchange'}"
    if phase == DONE:
        return f"{phase}: {entry.verdict} ({entry.reason})"
    return f"{phase}: {entry.reason}"


@dataclass(frozen=True)
class View:
    """What the console shows, all from one moment."""

    phase: str
    status: str
    #: the answer so far (streaming) or the shown entry's answer
    text: str
    #: the usage line of the shown entry (None while nothing finished)
    usage: str | None
    entry: HistoryEntry | None
    #: why a request ended without an exchange (an exception on the stream's thread)
    error: str | None
    #: the generation shown (0: none yet); bumps with every change, so a renderer can drop stale snapshots
    version: int

    @property
    def running(self) -> bool:
        return self.phase in RUNNING

    @property
    def send_enabled(self) -> bool:
        return not self.running

    @property
    def stop_enabled(self) -> bool:
        return self.running


class RequestState:
    """The request's life, one lock; see the module docs."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._gen = 0
        self._version = 0
        self._phase = IDLE
        self._pieces: list[str] = []
        self._text: str | None = None
        self._entry: HistoryEntry | None = None
        self._error: str | None = None

    # ---- transitions
    def begin(self) -> int:
        """A new request: sending, the previous answer cleared. Its generation number, for its callbacks."""
        with self._lock:
            if self._phase in RUNNING:
                raise ConfigError("a request is still running: stop it first")
            self._gen += 1
            self._set(SENDING, pieces=[], text=None, entry=None, error=None)
            return self._gen

    def abandon(self, gen: int) -> None:
        """The request of ``gen`` was refused before it was sent: back to idle (nothing shown)."""
        with self._lock:
            if gen == self._gen and self._phase in RUNNING:
                self._set(IDLE, pieces=[], text=None, entry=None, error=None)

    def delta(self, gen: int, piece: str) -> bool:
        """A piece of the answer of request ``gen`` (ignored, False, once that request is not the current one)."""
        with self._lock:
            if gen != self._gen or self._phase not in RUNNING:
                return False
            self._pieces.append(piece)
            self._set(STREAMING)
            return True

    def finish(self, gen: int, entry: HistoryEntry | None, error: str | None = None) -> bool:
        """Request ``gen`` ended: its entry (None with ``error``: no exchange at all)."""
        with self._lock:
            if gen != self._gen or self._phase not in RUNNING:
                return False
            text = entry.answer if entry is not None else "".join(self._pieces)
            self._set(phase_of(entry), text=text, entry=entry, error=error)
            return True

    def select(self, entry: HistoryEntry) -> bool:
        """Show a finished entry (its answer, usage and table); refused (False) while a request runs."""
        with self._lock:
            if self._phase in RUNNING:
                return False
            if entry is not self._entry:
                self._set(phase_of(entry), pieces=[], text=entry.answer, entry=entry, error=None)
            return True

    def _set(self, phase: str, *, pieces: list[str] | None = None, text: str | None | EllipsisType = ...,
             entry: HistoryEntry | None | EllipsisType = ..., error: str | None | EllipsisType = ...) -> None:
        """``...``: that part stays as it is."""
        self._phase = phase
        if pieces is not None:
            self._pieces = pieces
        if text is not ...:
            self._text = text
        if entry is not ...:
            self._entry = entry
        if error is not ...:
            self._error = error
        self._version += 1

    # ---- reading
    def snapshot(self) -> View:
        with self._lock:
            entry = self._entry
            text = self._text if self._text is not None else "".join(self._pieces)
            usage = Usage.from_exchange(entry.exchange).line() if entry is not None else None
            return View(phase=self._phase, status=status_of(self._phase, entry, self._error), text=text,
                        usage=usage, entry=entry, error=self._error, version=self._version)
