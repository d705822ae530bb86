"""The stream timeline as an inline SVG: one streamed answer's marks on an axis, idle gaps shaded, no label overlaps."""

from __future__ import annotations

import html
from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from hermes_nb.core.records import StreamTimeline
from hermes_nb.views.htmlkit import edge_colour, text_colour


def idle_gaps(tl: StreamTimeline) -> list[tuple[float, float]]:
    """(start, end) of every idle gap between consecutive marks: at least 0.2 s and 8 % of the whole."""
    marks = sorted({0.0, *(m for m in (tl.headers_s, tl.first_delta_s, tl.last_byte_s) if m is not None),
                    *tl.deltas, tl.total_s})
    span = max(tl.total_s, marks[-1] if marks else 0.0)
    threshold = max(0.2, 0.08 * span)
    return [(a, b) for a, b in pairwise(marks) if b - a >= threshold]


#: a character's width at most in the 11 px font, the row pitch, the rows idle-gap labels may take (others: tooltip)
CHAR_W, ROW_H, GAP_LABEL_ROWS = 6.6, 15, 3


def place_labels(spans: list[tuple[float, float]], *, max_rows: int | None = None) -> list[int | None]:
    """A row for each label span ``(x0, x1)``, greedy left to right, so no two labels of a row overlap (None: no
    room left)."""
    ends: list[float] = []  # each row's right end
    rows: list[int | None] = [None] * len(spans)
    for i in sorted(range(len(spans)), key=lambda i: spans[i][0]):
        x0, x1 = spans[i]
        row = next((r for r, end in enumerate(ends) if x0 >= end + 4), len(ends))  # 4 px apart, else a new row
        if max_rows is None or row < max_rows:
            ends[row:row + 1] = [x1]
            rows[i] = row
    return rows


def timeline_svg(tl: StreamTimeline | Mapping[str, Any], *, width: int = 640, title: str = "stream timeline") -> str:
    """The timeline as one inline ``<svg>`` (deterministic for the same marks); no two labels overlap."""
    if isinstance(tl, Mapping):
        tl = StreamTimeline.from_dict(tl)
    left, right = 10, 10
    marks = [m for m in (tl.headers_s, tl.first_delta_s, tl.last_byte_s, *tl.deltas) if m is not None]
    span = max([tl.total_s, *marks, 1e-3])
    scale = (width - left - right) / span

    def x(t: float) -> float:
        return round(left + t * scale, 1)

    # the marks' labels above the axis, each row holding labels that do not overlap
    named = [(t, label, tone) for t, label, tone in (
        (0.0, "sent", "muted"), (tl.headers_s, "headers", "info"), (tl.first_delta_s, "first delta", "accent"),
        (tl.last_byte_s, "stopped" if tl.stopped else "last byte", "bad" if tl.stopped else "good"),
    ) if t is not None]
    texts = [f"{label} {t:.3f} s" for t, label, _ in named]
    placed = []  # (anchor, extent) of each label: right of its mark unless it would run off
    for (t, _, _), text in zip(named, texts, strict=True):
        w = len(text) * CHAR_W
        fits = x(t) + 3 + w <= width - right
        placed.append(("start", (x(t) + 3, x(t) + 3 + w)) if fits else ("end", (x(t) - 3 - w, x(t) - 3)))
    rows = place_labels([extent for _, extent in placed])
    top_rows = max((r for r in rows if r is not None), default=0) + 1
    axis_y = 14 + ROW_H * top_rows + 4
    gaps = idle_gaps(tl)
    gap_texts = [f"idle {b - a:.2f} s" for a, b in gaps]
    gap_spans = [((x(a) + x(b)) / 2 - len(t) * CHAR_W / 2, (x(a) + x(b)) / 2 + len(t) * CHAR_W / 2)
                 for (a, b), t in zip(gaps, gap_texts, strict=True)]
    gap_rows = place_labels(gap_spans, max_rows=GAP_LABEL_ROWS)
    below = max((r for r in gap_rows if r is not None), default=-1) + 1
    footer_y = axis_y + 14 + ROW_H * below + 12
    height = footer_y + 4
    muted, warn = text_colour("muted"), text_colour("warn")

    parts = [f'<svg class="hermes-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}" '
             'style="font:11px system-ui,sans-serif;max-width:100%">',
             f"<title>{html.escape(title)}</title>"]
    for (a, b), text, row in zip(gaps, gap_texts, gap_rows, strict=True):
        parts.append(f'<rect class="gap" x="{x(a)}" y="{axis_y - 14}" width="{round(x(b) - x(a), 1)}" height="28" '
                     f'style="fill:color-mix(in srgb,{edge_colour("warn")} 18%,transparent);'
                     f'stroke:{edge_colour("warn")}"'
                     f' stroke-dasharray="3,2"><title>idle {b - a:.3f} s</title></rect>')
        if row is not None:
            parts.append(f'<text class="label" x="{round((x(a) + x(b)) / 2, 1)}" y="{axis_y + 14 + ROW_H * row + 11}" '
                         f'text-anchor="middle" style="fill:{warn}">{text}</text>')
    parts.append(f'<line x1="{x(0)}" y1="{axis_y}" x2="{x(span)}" y2="{axis_y}" style="stroke:{muted}" '
                 'stroke-width="1.5"/>')
    for t in tl.deltas:
        parts.append(f'<line class="delta" x1="{x(t)}" y1="{axis_y - 7}" x2="{x(t)}" y2="{axis_y + 7}" '
                     f'style="stroke:{edge_colour("accent")}" stroke-width="2">'
                     f'<title>delta at {t:.3f} s</title></line>')
    for (t, label, tone), text, (anchor, (x0, x1)), row in zip(named, texts, placed, rows, strict=True):
        y = 14 + ROW_H * (row or 0)
        colour = text_colour(tone)
        parts.append(f'<line class="mark" x1="{x(t)}" y1="{y + 2}" x2="{x(t)}" y2="{axis_y + 10}" '
                     f'style="stroke:{colour}" stroke-width="1.5">'
                     f'<title>{html.escape(label)} at {t:.3f} s</title></line>')
        parts.append(f'<text class="label" x="{round(x0 if anchor == "start" else x1, 1)}" y="{y}" '
                     f'text-anchor="{anchor}" style="fill:{colour}">{html.escape(text)}</text>')
    footer = f"{len(tl.deltas)} deltas · total {tl.total_s:.3f} s"
    if None in gap_rows:
        footer += f" · {len(gaps)} idle gaps (hover for each)"
    parts.append(f'<text class="label" x="{width - right}" y="{footer_y}" text-anchor="end" style="fill:{muted}">'
                 f"{footer}</text></svg>")
    return "".join(parts)
