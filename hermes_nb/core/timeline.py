"""The timing marks of one streamed answer (plain data): response headers, the first delta, every delta, the last
byte and the total, in seconds since the request was sent. Its picture is :func:`hermes_nb.views.timeline.timeline_svg`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["StreamTimeline"]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_delta(data: str) -> bool:
    """A chat/completion chunk that carries text (``choices[0].delta.content`` or ``choices[0].text``)."""
    if not data or data == "[DONE]" or data[:1] != "{":
        return False
    try:
        obj = json.loads(data)
    except ValueError:
        return False
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    first = choices[0]
    delta = first.get("delta")
    if isinstance(delta, dict) and delta.get("content"):
        return True
    return bool(first.get("text"))


@dataclass(frozen=True)
class StreamTimeline:
    """Marks of one exchange in seconds since the request was sent (None: did not happen)."""

    headers_s: float | None = None
    first_delta_s: float | None = None
    deltas: tuple[float, ...] = field(default_factory=tuple)
    last_byte_s: float | None = None
    total_s: float = 0.0
    #: the stream was stopped by its reader (the console's Stop)
    stopped: bool = False

    @classmethod
    def from_exchange(cls, exchange: Any, *, stopped: bool = False) -> StreamTimeline:
        """The marks of an :class:`~hermes_nb.core.records.Exchange` (its timings and SSE events)."""
        t = exchange.timings
        deltas = tuple(round(e.t, 4) for e in exchange.events if _is_delta(e.data))
        if not deltas:  # a run's Exchange keeps no event records, only the delta times
            deltas = tuple(round(x, 4) for x in getattr(t, "delta_s", ()) or ())
        return cls(headers_s=t.headers_s, first_delta_s=t.first_delta_s if t.first_delta_s is not None else
                   (deltas[0] if deltas else None), deltas=deltas, last_byte_s=t.last_byte_s,
                   total_s=t.total_s, stopped=stopped)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamTimeline:
        deltas = tuple(v for v in (_num(x) for x in data.get("deltas") or ()) if v is not None)
        return cls(headers_s=_num(data.get("headers_s")), first_delta_s=_num(data.get("first_delta_s")),
                   deltas=deltas, last_byte_s=_num(data.get("last_byte_s")),
                   total_s=_num(data.get("total_s")) or 0.0, stopped=bool(data.get("stopped")))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (a verdict summary carries it into the receipt)."""
        out = asdict(self)
        out["deltas"] = list(self.deltas)
        return out
