"""The timing of one streamed answer, and its picture as an inline SVG (no plotting dependency).

:class:`StreamTimeline` holds the marks of one exchange, in seconds since the
request was sent: response headers, the first delta, every delta, the last
byte and the total. :func:`timeline_svg` draws them on one axis with the idle
gaps (no byte for a noticeable while) shaded and labelled, so a stall or a
slow first token is visible at a glance. The receipts, the console and the
``Exchange`` repr use the same picture.

Pure and dependency-free (JSON parsing of the recorded events only): drawing
one timeline costs well under a millisecond.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["StreamTimeline", "timeline_svg", "idle_gaps"]

#: a gap at least this long (seconds), and at least :data:`GAP_SHARE` of the total, is shaded as idle
MIN_GAP_S = 0.2
GAP_SHARE = 0.08


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


def idle_gaps(tl: StreamTimeline) -> list[tuple[float, float]]:
    """(start, end) of every idle gap: between consecutive marks, long enough to notice."""
    marks = sorted({0.0, *(m for m in (tl.headers_s, tl.first_delta_s, tl.last_byte_s) if m is not None),
                    *tl.deltas, tl.total_s})
    span = max(tl.total_s, marks[-1] if marks else 0.0)
    threshold = max(MIN_GAP_S, GAP_SHARE * span)
    return [(a, b) for a, b in zip(marks, marks[1:]) if b - a >= threshold]


def timeline_svg(tl: StreamTimeline | Mapping[str, Any], *, width: int = 640, title: str = "stream timeline") -> str:
    """The timeline as one inline ``<svg>`` (deterministic for the same marks)."""
    if isinstance(tl, Mapping):
        tl = StreamTimeline.from_dict(tl)
    height, left, right, axis_y = 88, 10, 10, 54
    marks = [m for m in (tl.headers_s, tl.first_delta_s, tl.last_byte_s, *tl.deltas) if m is not None]
    span = max([tl.total_s, *marks, 1e-3])
    scale = (width - left - right) / span

    def x(t: float) -> float:
        return round(left + t * scale, 1)

    parts = [f'<svg class="hermes-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}" '
             'style="font:11px system-ui,sans-serif;max-width:100%">',
             f"<title>{html.escape(title)}</title>"]
    for a, b in idle_gaps(tl):
        parts.append(f'<rect class="gap" x="{x(a)}" y="{axis_y - 14}" width="{round(x(b) - x(a), 1)}" height="28" '
                     f'fill="#fff8c5" stroke="#d4a72c" stroke-dasharray="3,2"><title>idle {b - a:.3f} s</title></rect>')
        parts.append(f'<text x="{round((x(a) + x(b)) / 2, 1)}" y="{axis_y + 26}" text-anchor="middle" '
                     f'fill="#9a6700">idle {b - a:.2f} s</text>')
    parts.append(f'<line x1="{x(0)}" y1="{axis_y}" x2="{x(span)}" y2="{axis_y}" stroke="#57606a" stroke-width="1.5"/>')
    for t in tl.deltas:
        parts.append(f'<line class="delta" x1="{x(t)}" y1="{axis_y - 7}" x2="{x(t)}" y2="{axis_y + 7}" '
                     f'stroke="#0969da" stroke-width="2"><title>delta at {t:.3f} s</title></line>')

    def mark(t: float | None, label: str, colour: str, row: int) -> None:
        if t is None:
            return
        y = 10 + 10 * row
        anchor = "start" if x(t) < width * 0.75 else "end"
        parts.append(f'<line class="mark" x1="{x(t)}" y1="{y + 2}" x2="{x(t)}" y2="{axis_y + 10}" stroke="{colour}" '
                     f'stroke-width="1.5"><title>{html.escape(label)} at {t:.3f} s</title></line>')
        parts.append(f'<text x="{x(t) + (3 if anchor == "start" else -3)}" y="{y}" text-anchor="{anchor}" '
                     f'fill="{colour}">{html.escape(label)} {t:.3f} s</text>')

    # one label row each, so marks close in time never print over each other
    mark(0.0, "sent", "#57606a", 0)
    mark(tl.headers_s, "headers", "#8250df", 1)
    mark(tl.first_delta_s, "first delta", "#0969da", 2)
    end = tl.last_byte_s
    mark(end, "stopped" if tl.stopped else "last byte", "#cf222e" if tl.stopped else "#1a7f37", 3)
    parts.append(f'<text x="{width - right}" y="{height - 2}" text-anchor="end" fill="#57606a">'
                 f'{len(tl.deltas)} deltas · total {tl.total_s:.3f} s</text>')
    parts.append("</svg>")
    return "".join(parts)

