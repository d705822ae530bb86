"""The one HTML toolkit of every face (reprs, console, magics, receipts, ``index.html``). Every colour is a
JupyterLab theme variable (``--jp-*``) with a fallback; a verdict's text colour is its tone mixed with the theme's
strongest font colour (>= 4.5:1, WCAG AA, in Lab's light and dark themes). Every value is redacted and escaped.
The stream timeline is an inline SVG: one streamed answer's marks on an axis, idle gaps shaded, no label overlaps."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

from hermes_nb.core.records import StreamTimeline
from hermes_nb.core.redaction import Redactor

#: JupyterLab's own theme values: the fallbacks outside Lab, and a standalone page's variables (light; dark on request)
_LIGHT = {
    "content-font-color0": "#000", "content-font-color1": "rgba(0,0,0,.87)", "content-font-color2": "rgba(0,0,0,.54)",
    "layout-color0": "#fff", "border-color2": "#e0e0e0", "cell-editor-background": "#f5f5f5",
    "success-color1": "#388e3c", "error-color1": "#d32f2f", "warn-color1": "#f57c00", "brand-color1": "#1976d2",
    "info-color1": "#0097a7",
}
_DARK = {
    "content-font-color0": "#fff", "content-font-color1": "#fff", "content-font-color2": "rgba(255,255,255,.7)",
    "layout-color0": "#111", "border-color2": "#424242", "cell-editor-background": "#212121",
    "success-color1": "#4caf50", "error-color1": "#f44336", "warn-color1": "#ff9800", "brand-color1": "#2196f3",
    "info-color1": "#00bcd4",
}
TONES: dict[str, tuple[str, str]] = {tone: (f"--jp-{var}", _LIGHT[var]) for tone, var in (
    ("good", "success-color1"), ("bad", "error-color1"), ("warn", "warn-color1"), ("accent", "brand-color1"),
    ("info", "info-color1"), ("muted", "content-font-color2"))}
_TONE_SHARE = 65  # of a text colour; the rest is the theme's strongest font colour
_FONT0 = "var(--jp-content-font-color0,#000)"
VERDICT_TONES: dict[str, str] = {
    **dict.fromkeys(("passed", "ready", "ok", "live", "forwarded", "done", "True"), "good"),
    **dict.fromkeys(("failed", "error", "misconfigured", "drift", "False"), "bad"),
    **dict.fromkeys(("blocked", "locked", "unreachable", "stale", "warning"), "warn"),
    **dict.fromkeys(("stopped", "cancelled", "sending", "streaming", "idle"), "muted"),
}


def text_colour(tone: str) -> str:
    """A text colour for ``tone`` that reads at ≥ 4.5:1 in JupyterLab's light and dark themes."""
    var, fallback = TONES[tone]
    return f"color-mix(in srgb,var({var},{fallback}) {_TONE_SHARE}%,{_FONT0})"


def edge_colour(tone: str) -> str:  # the tone itself, for borders and marks (never for text)
    return "var({},{})".format(*TONES[tone])


def tone_of(word: Any) -> str | None:
    return VERDICT_TONES.get(str(word))


VERDICT_COLOURS: dict[str, str] = {word: text_colour(t) for word, t in VERDICT_TONES.items()}
MUTED = text_colour("muted")
BORDER = "var(--jp-border-color2,#d0d7de)"
CODE_BACKGROUND = "var(--jp-cell-editor-background,transparent)"

_CELL = f"border:1px solid {BORDER};padding:2px 8px;vertical-align:top;text-align:left"
TD_STYLE = f"{_CELL};overflow-wrap:anywhere"  # values wrap anywhere (URLs, digests); headers at word boundaries
TH_STYLE = f"{_CELL};overflow-wrap:normal;word-break:normal;hyphens:manual"
_TABLE = '<table class="hermes-nb" style="border-collapse:collapse;text-align:left;max-width:100%">'
_WRAP = '<div class="hermes-nb-box" style="max-width:100%;overflow-x:auto">'
_SHAPES = Redactor()


def esc(value: Any, redactor: Redactor | None = None) -> str:
    """One value as escaped, redacted text (``—`` for None, JSON for structures)."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return html.escape((redactor or _SHAPES).text(text))


def seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f} s"


def note(text: str, tone: str = "muted") -> str:
    """A short escaped note (a hint, a validation message) in ``tone``."""
    return f'<small style="color:{text_colour(tone)}">{html.escape(text)}</small>'


def badge(word: Any, text: str | None = None) -> str:
    """A verdict word (or ``text`` in the word's colour), bold."""
    colour = VERDICT_COLOURS.get(str(word))
    shown = esc(word if text is None else text)
    return f'<b style="color:{colour}">{shown}</b>' if colour else shown


def _cell(value: Any, marked: bool, redactor: Redactor | None) -> str:
    return badge(value) if marked and value is not None else esc(value, redactor)


def _table(title: str | None, rows: str) -> str:
    caption = f'<caption style="text-align:left"><b>{html.escape(title)}</b></caption>' if title else ""
    return f"{_WRAP}{_TABLE}{caption}{rows}</table></div>"


def kv_html(pairs: Iterable[tuple[str, Any]], *, badges: Iterable[str] = ("verdict", "status", "state"),
            redactor: Redactor | None = None, title: str | None = None) -> str:
    """Key/value rows; the values of ``badges`` keys in their verdict colour."""
    marked = set(badges)
    rows = "".join(f'<tr><th style="{TH_STYLE}">{html.escape(key)}</th>'
                   f'<td style="{TD_STYLE}">{_cell(value, key in marked, redactor)}</td></tr>' for key, value in pairs)
    return _table(title, rows)


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
               badges: Iterable[str] = ("verdict", "status", "outcome"), redactor: Redactor | None = None) -> str:
    """One row per mapping; wraps and scrolls inside its box."""
    marked = set(badges)
    head = "".join(f'<th style="{TH_STYLE}">{html.escape(c)}</th>' for c in columns)
    body = ["<tr>" + "".join(f'<td style="{TD_STYLE}">{_cell(row.get(c), c in marked, redactor)}</td>'
                             for c in columns) + "</tr>" for row in rows]
    if not rows:
        body.append(f'<tr><td style="{TD_STYLE}" colspan="{max(len(columns), 1)}">(none)</td></tr>')
    return _table(None, f"<tr>{head}</tr>{''.join(body)}")


def box(title: str, verdict: Any, *parts: str, headline: str | None = None) -> str:
    """A block with a coloured left edge: the title, the verdict (or ``headline`` in its colour), the parts."""
    tone = tone_of(verdict)
    edge = edge_colour(tone) if tone else BORDER
    shown = badge(verdict, headline) if verdict is not None else (esc(headline) if headline else "")
    head = f"<b>{html.escape(title)}</b>" + (f" · {shown}" if shown else "")
    return (f'<div class="hermes-nb-repr" style="border-left:4px solid {edge};padding:2px 8px;margin:4px 0">'
            f"<div>{head}</div>{''.join(parts)}</div>")


def details(summary: str, body: str) -> str:
    """A collapsed section (``summary`` is escaped, ``body`` is HTML)."""
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def pre(text: str, redactor: Redactor | None = None) -> str:
    """Preformatted, wrapped, escaped and redacted text on the theme's code background."""
    return (f'<pre style="white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0;padding:4px 6px;'
            f'background:{CODE_BACKGROUND}">{esc(text, redactor)}</pre>')


class _Renderer(HTMLRenderer):
    """Raw HTML escaped, safe link schemes only, images as links: nothing in an answer runs or fetches."""

    SAFE_PROTOCOLS = ("http:", "https:", "mailto:")

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return self.link(f"image: {text or url}", url, title)

    def link(self, text: str, url: str, title: str | None = None) -> str:
        return super().link(text, url, title).replace("<a ", '<a rel="noopener noreferrer" ', 1)


_MARKDOWN = mistune.create_markdown(renderer=_Renderer(escape=True), plugins=["strikethrough", "table"])


def markdown_html(text: str, redactor: Redactor | None = None) -> str:
    """``text`` (redacted) rendered as Markdown, sanitised (:class:`_Renderer`)."""
    return str(_MARKDOWN((redactor or _SHAPES).text(text)))


def page_css() -> str:
    """A standalone page's stylesheet: the theme variables (light; dark on the reader's wish), the one table style."""
    light, dark = (";".join(f"--jp-{k}:{v}" for k, v in theme.items()) for theme in (_LIGHT, _DARK))
    return "\n".join((
        f":root{{color-scheme:light dark;{light}}}",
        f"@media (prefers-color-scheme: dark){{:root{{{dark}}}}}",
        "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
        "background:var(--jp-layout-color0);color:var(--jp-content-font-color1)}",
        f"a{{color:{text_colour('accent')}}}small,.muted{{color:{MUTED}}}",
        f"pre{{background:{CODE_BACKGROUND};padding:.6em;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}}",
        f"table{{border-collapse:collapse}}td{{{TD_STYLE}}}th{{{TH_STYLE}}}",
    ))


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
