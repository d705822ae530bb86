"""The console's requests and records: one request streamed on its own thread, and the session's history.

:class:`StreamJob` sends one request **off the kernel's main thread** and hands each delta to a callback as it
arrives; :meth:`StreamJob.stop` shuts the socket down, so the read ends at once and the partial text is kept.
:class:`History` keeps the session's exchanges, each exportable as JSON with secrets masked; given a file
(``ProbeConsole(history=path)``) it appends each entry there as one JSON line, secrets masked, and reads the
file back when a console starts, so the history survives a kernel restart.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import ConfigError
from hermes_nb.core.redaction import Redactor

if TYPE_CHECKING:
    from hermes_nb.core.records import Exchange, Outcome

__all__ = ["EXPORT_SCHEMA", "StreamJob", "HistoryEntry", "History"]

EXPORT_SCHEMA = "hermes-nb.console-exchange.v1"


class StreamJob:
    """One request on its own thread; deltas go to ``on_delta`` as they arrive; :meth:`stop` cancels.

    Stop shuts the connection's socket down (the socket is taken from httpcore's ``connect_tcp`` trace
    event, the same hook the client's deadline watchdog uses): the blocked read returns at once, the client
    records the cut as a transport failure, and the exchange keeps every delta that arrived.
    """

    def __init__(self, client: Any, request: Any, *, sse: bool, on_delta: Callable[[str], None] | None = None,
                 on_done: Callable[[StreamJob], None] | None = None, deadline_s: float | None = None) -> None:
        self.client = client
        self.request = request
        self.sse = sse
        self.on_delta = on_delta
        self.on_done = on_done
        self.deadline_s = deadline_s
        self.pieces: list[str] = []
        self.exchange: Exchange | None = None
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        #: set when the request has ended, before ``on_done`` runs: a new request may start from then on
        self.ended = threading.Event()
        self.done = threading.Event()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hermes-nb-console-stream", daemon=True)
        request.extensions["trace"] = self._trace

    @property
    def text(self) -> str:
        """Every delta received so far (the partial text after a stop)."""
        return "".join(self.pieces)

    @property
    def running(self) -> bool:
        """Started and not ended (False again as soon as the request ended, even while ``on_done`` runs)."""
        return self._thread.is_alive() and not self.ended.is_set()

    def start(self) -> StreamJob:
        self._thread.start()
        return self

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete":
            stream: Any = info.get("return_value")  # httpcore's network stream (its backend's own class)
            sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
            with self._lock:
                self._sock = sock if isinstance(sock, socket.socket) else None
            if self.stopped.is_set():
                self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: the stream has ended anyway
                pass

    def _delta(self, piece: str) -> None:
        self.pieces.append(piece)
        if self.on_delta is not None:
            self.on_delta(piece)

    def _run(self) -> None:
        try:
            self.exchange = self.client.send(self.request, sse=self.sse, on_delta=self._delta,
                                             deadline_s=self.deadline_s)
        except BaseException as exc:  # thread edge: kept for the caller, shown in the response panel
            self.error = exc
        finally:
            self.client.close()
            self.ended.set()
            try:
                if self.on_done is not None:
                    self.on_done(self)
            finally:  # waiters see the history entry and the final widget values
                self.done.set()

    def stop(self) -> None:
        """Cancel the request; what arrived stays in :attr:`text` and in the exchange."""
        if self.done.is_set():
            return
        self.stopped.set()
        self._shutdown()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the request ended (for scripts and tests; cells never need it)."""
        return self.done.wait(timeout)


# --------------------------------------------------------------------------- history

@dataclass
class HistoryEntry:
    """One exchange of the session and its classification."""

    number: int
    route: str
    exchange: Exchange
    verdict: str
    reason: str
    hint: str | None = None
    errors: list[str] = field(default_factory=list)
    stopped: bool = False
    outcome: Outcome | None = None
    #: the provider the proxy fronts (its ``/health``), when it says
    provider: str | None = None

    @property
    def label(self) -> str:
        ex = self.exchange
        status = ex.status if ex.status is not None else "—"
        return f"#{self.number} {ex.request.method} {self.route} → {status} {self.verdict} ({self.reason})"

    @property
    def answer(self) -> str:
        """What the exchange answered: the assistant text, else the body (JSON pretty-printed)."""
        ex = self.exchange
        if ex.text:
            return ex.text
        if ex.json_body is not None:
            return json.dumps(ex.json_body, indent=2, ensure_ascii=False)
        return ex.body_text or ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HistoryEntry:
        """An entry back from :meth:`to_dict` (a history file line)."""
        from hermes_nb.core.records import Exchange, Outcome

        if data.get("schema") != EXPORT_SCHEMA:
            raise ValueError(f"not a {EXPORT_SCHEMA} record")
        outcome = data.get("outcome")
        return cls(number=int(data["number"]), route=str(data["route"]),
                   exchange=Exchange.model_validate(data["exchange"]), verdict=str(data["verdict"]),
                   reason=str(data["reason"]), hint=data.get("hint"), errors=list(data.get("errors") or []),
                   stopped=bool(data.get("stopped")),
                   outcome=Outcome.model_validate(outcome) if outcome is not None else None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": EXPORT_SCHEMA,
            "number": self.number,
            "route": self.route,
            "provider": self.provider,
            "verdict": self.verdict,
            "reason": self.reason,
            "hint": self.hint,
            "errors": list(self.errors),
            "stopped": self.stopped,
            "outcome": self.outcome.model_dump(mode="json") if self.outcome is not None else None,
            "exchange": self.exchange.model_dump(mode="json"),
        }


class History:
    """The session's exchanges, oldest first; thread-safe appends (entries come from stream threads).

    ``path``: a JSON-lines file; the entries already in it are loaded, and each new one is appended to it
    (every string through ``redactor``, so secrets never reach the file).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, redactor: Redactor | None = None) -> None:
        self.entries: list[HistoryEntry] = []
        self._lock = threading.Lock()
        self.path = Path(path) if path is not None else None
        self._redactor = redactor or Redactor()
        if self.path is not None and self.path.is_file():
            self.entries = self.load(self.path)

    @staticmethod
    def load(path: str | os.PathLike[str]) -> list[HistoryEntry]:
        """The entries of a history file (a ConfigError naming the line that is not one)."""
        entries = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append(HistoryEntry.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"history file {path}, line {n}: not a console exchange ({exc})") from None
        return entries

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> HistoryEntry:
        return self.entries[i]

    def add(self, **fields: Any) -> HistoryEntry:
        with self._lock:
            number = self.entries[-1].number + 1 if self.entries else 1
            entry = HistoryEntry(number=number, **fields)
            self.entries.append(entry)
            if self.path is not None:
                line = json.dumps(self._redactor.data(entry.to_dict()), ensure_ascii=False, sort_keys=True)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
        return entry

    def labels(self) -> list[tuple[str, int]]:
        """``(label, index)`` pairs for a picker, newest first."""
        return [(e.label, i) for i, e in reversed(list(enumerate(self.entries)))]

    def export_json(self, index: int, redactor: Redactor | None = None) -> str:
        """The selected exchange as JSON, every string through the redactor (secrets masked)."""
        data = (redactor or Redactor()).data(self.entries[index].to_dict())
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
