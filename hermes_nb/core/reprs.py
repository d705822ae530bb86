"""Rich reprs: small HTML building blocks and the ``_repr_html_`` / plain-text views of the records.

Every record a cell can end with (``Exchange`` here; ``CheckResult``,
``WireReport``, ``RunResult`` and the smoke result in their own layers, built
from these blocks) shows itself compactly: a coloured verdict, the few fields
a person looks at first, durations written ``n.nnn s``. Only allow-listed
fields are shown, every string goes through a :class:`Redactor` (secret
shapes) and :func:`html.escape`; raw request headers, tokens and settings
never appear. Tables wrap long values and scroll inside their box instead of
overflowing the page.

This module is in ``core`` so that records of every layer can use it without
importing upward.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hermes_nb.core.redaction import Redactor

__all__ = [
    "VERDICT_COLOURS",
    "colour_of",
    "badge",
    "esc",
    "seconds",
    "kv_html",
    "table_html",
    "box",
    "raw",
    "pretty_text",
    "exchange_html",
    "exchange_text",
]

VERDICT_COLOURS = {
    "passed": "#1a7f37", "ready": "#1a7f37", "ok": "#1a7f37", "live": "#1a7f37", "forwarded": "#1a7f37",
    "failed": "#cf222e", "error": "#cf222e", "misconfigured": "#cf222e", "drift": "#cf222e",
    "blocked": "#9a6700", "locked": "#9a6700", "unreachable": "#9a6700", "stale": "#9a6700",
    "stopped": "#57606a", "cancelled": "#57606a",
}
_CELL = 'style="border:1px solid #d0d7de;padding:2px 8px;vertical-align:top;overflow-wrap:anywhere"'
_TABLE = ('<table class="hermes-nb" style="border-collapse:collapse;text-align:left;max-width:100%">')
_WRAP = '<div class="hermes-nb-box" style="max-width:100%;overflow-x:auto">'
_SHAPES = Redactor()


def colour_of(word: Any) -> str | None:
    return VERDICT_COLOURS.get(str(word))


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


def badge(word: Any) -> str:
    """A verdict word in its colour (bold)."""
    colour = colour_of(word)
    text = esc(word)
    return f'<b style="color:{colour}">{text}</b>' if colour else text


def kv_html(pairs: Iterable[tuple[str, Any]], *, badges: Iterable[str] = ("verdict", "status", "state"),
            redactor: Redactor | None = None) -> str:
    """Key/value rows; the values of ``badges`` keys in their verdict colour; raw HTML values kept."""
    marked = set(badges)
    rows = []
    for key, value in pairs:
        if isinstance(value, _Raw):
            shown = value.html
        elif key in marked and value is not None:
            shown = badge(value)
        else:
            shown = esc(value, redactor)
        rows.append(f"<tr><th {_CELL}>{html.escape(key)}</th><td {_CELL}>{shown}</td></tr>")
    return f"{_WRAP}{_TABLE}{''.join(rows)}</table></div>"


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
               badges: Iterable[str] = ("verdict", "status", "outcome"), redactor: Redactor | None = None) -> str:
    """One row per mapping; wraps and scrolls inside its box."""
    marked = set(badges)
    head = "".join(f"<th {_CELL}>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c)
            cells.append(value.html if isinstance(value, _Raw)
                         else badge(value) if c in marked and value is not None else esc(value, redactor))
        body.append("<tr>" + "".join(f"<td {_CELL}>{v}</td>" for v in cells) + "</tr>")
    if not rows:
        body.append(f'<tr><td {_CELL} colspan="{max(len(columns), 1)}">(none)</td></tr>')
    return f"{_WRAP}{_TABLE}<tr>{head}</tr>{''.join(body)}</table></div>"


class _Raw:
    """Already-built HTML (a badge, an SVG) placed in a table cell as is."""

    __slots__ = ("html",)

    def __init__(self, markup: str) -> None:
        self.html = markup


def raw(markup: str) -> _Raw:
    return _Raw(markup)


def box(title: str, verdict: Any, *parts: str) -> str:
    """A bordered block: a title line with the verdict in its colour, then the parts."""
    colour = colour_of(verdict) or "#d0d7de"
    head = f"<b>{html.escape(title)}</b>" + (f" · {badge(verdict)}" if verdict is not None else "")
    return (f'<div class="hermes-nb-repr" style="border-left:4px solid {colour};padding:2px 8px;margin:4px 0">'
            f"<div>{head}</div>{''.join(parts)}</div>")


def pretty_text(obj: Any, p: Any, cycle: bool) -> None:
    """IPython's ``_repr_pretty_``: the object's compact text (``text/plain`` in notebooks)."""
    p.text(type(obj).__name__ + "(...)" if cycle else obj._repr_text_())


# --------------------------------------------------------------------------- Exchange

def _excerpt(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def exchange_text(ex: Any) -> str:
    """``Exchange(POST …/chat/completions → 200 OK, streamed, 12 deltas, 0.412 s, 57 chars)``."""
    req = ex.request
    status = f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else (
        f"no response ({ex.transport_error.kind})" if ex.transport_error else "no response")
    bits = [status]
    if ex.streamed:
        bits.append(f"streamed, {len(ex.events)} events")
    bits.append(f"{ex.timings.total_s:.3f} s")
    if ex.text:
        bits.append(f"{len(ex.text)} chars")
    if ex.envelope is not None and (ex.envelope.type or ex.envelope.code is not None):
        bits.append(f"error {ex.envelope.type or ex.envelope.code}")
    return _SHAPES.text(f"Exchange({req.method} {req.url} → {', '.join(bits)})")


def exchange_html(ex: Any, *, timeline: bool = True) -> str:
    """A compact view of one exchange: request line, status, timings, text, error, stream timeline."""
    from hermes_nb.core.timeline import StreamTimeline, timeline_svg

    t = ex.timings
    verdict = "ok" if ex.ok_status and ex.transport_error is None and not ex.in_band_error else (
        "error" if ex.status is not None or ex.transport_error is not None else None)
    pairs: list[tuple[str, Any]] = [
        ("request", f"{ex.request.method} {ex.request.url}"),
        ("status", f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else None),
        ("content type", ex.content_type),
        ("headers / first delta / total", " / ".join(seconds(v) or "—" for v in (t.headers_s, t.first_delta_s,
                                                                              t.total_s))),
    ]
    if ex.streamed:
        pairs.append(("stream", f"{len(ex.events)} events, [DONE] {'seen' if ex.done else 'not seen'}, "
                                f"finish_reason {ex.finish_reason or '—'}"))
    if ex.envelope is not None:
        env = ex.envelope
        pairs.append(("error envelope", {k: v for k, v in (("type", env.type), ("code", env.code),
                                                            ("message", env.message)) if v is not None}))
    if ex.transport_error is not None:
        pairs.append(("transport", f"{ex.transport_error.kind} ({ex.transport_error.phase}): "
                                   f"{ex.transport_error.message}"))
    if ex.retry_after_s is not None:
        pairs.append(("retry after", seconds(ex.retry_after_s)))
    body = [kv_html(pairs, badges=())]
    if ex.text:
        body.append(f'<pre style="white-space:pre-wrap;margin:4px 0">{esc(_excerpt(ex.text))}</pre>')
    elif ex.body_text and not ex.ok_status:
        body.append(f'<pre style="white-space:pre-wrap;margin:4px 0">{esc(_excerpt(ex.body_text, 300))}</pre>')
    if timeline and ex.streamed:
        body.append(timeline_svg(StreamTimeline.from_exchange(ex)))
    return box("exchange", verdict, *body)
