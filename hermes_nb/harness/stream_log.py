"""A run's streamed answer and its SSE events, released in order and redacted: a secret split across deltas never
reaches the log (:class:`~hermes_nb.core.redaction.StreamRedactor`), and each event waits until the piece
it carried is settled, so it is logged with its share of the secret masked."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_nb.core.records import SSEEventRecord
from hermes_nb.core.redaction import Redactor, StreamRedactor


@dataclass
class _QueuedEvent:
    record: SSEEventRecord
    span: tuple[int, int] | None = None  # its piece's place in the streamed text
    closed: bool = False  # no piece will follow for it


def _set_content(payload: Any, text: str) -> bool:
    """Replace the content piece of a chat chunk (``choices[0].delta``/``message``); True if it changed."""
    try:
        choice = payload["choices"][0]
        holder = choice["delta"] if isinstance(choice.get("delta"), dict) else choice["message"]
        if not isinstance(holder.get("content"), str) or holder["content"] == text:
            return False
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
    holder["content"] = text
    return True


class RedactedStream:
    """``event(record)`` and ``piece(text)`` as the client reads; ``write_text(safe)`` gets settled, redacted
    text, ``write_event(record, payload)`` each event once its piece is settled (the record's ``data`` rewritten
    when masking changed it); ``finish()`` releases the rest."""

    def __init__(self, redactor: Redactor, *, write_text: Callable[[str], None],
                 write_event: Callable[[SSEEventRecord, Any], None]) -> None:
        self.text = StreamRedactor(redactor)
        self.write_text, self.write_event = write_text, write_event
        self._queue: list[_QueuedEvent] = []

    def event(self, record: SSEEventRecord) -> None:
        for queued in self._queue:
            queued.closed = True  # the client delivers an event's piece before the next event
        self._drain()
        self._queue.append(_QueuedEvent(record))

    def piece(self, text: str) -> None:
        if not text:
            return
        last = self._queue[-1] if self._queue else None
        if last is not None and last.span is None and not last.closed:
            last.span = (self.text.length, self.text.length + len(text))
        self._release(self.text.feed(text))

    def finish(self) -> None:
        self._release(self.text.flush())
        self._drain(final=True)

    def _release(self, safe: str) -> None:
        if safe:
            self._drain()  # the events that carried the text go first (on_delta hooks see them logged)
            self.write_text(safe)

    def _drain(self, *, final: bool = False) -> None:
        while self._queue:
            queued = self._queue[0]
            if queued.span is None and not (queued.closed or final):
                break
            if queued.span is not None and queued.span[1] > self.text.settled:
                break
            self._queue.pop(0)
            record = queued.record
            try:
                payload: Any = json.loads(record.data)
            except ValueError:
                payload = record.data
            if queued.span is not None and _set_content(payload, self.text.mask(*queued.span)):
                record = record.model_copy(update={"data": json.dumps(payload, ensure_ascii=False)})
            self.write_event(record, payload)
        self.text.forget(min((q.span[0] for q in self._queue if q.span is not None), default=self.text.settled))
