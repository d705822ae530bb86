"""Rich reprs: small HTML building blocks and the ``_repr_html_`` / plain-text views of the records.

Every record a cell can end with (``Exchange`` here; ``CheckResult``,
``WireReport``, ``RunResult`` and the smoke result in their own layers, built
from these blocks) shows itself compactly: a coloured verdict, the few fields
a person looks at first, durations written ``n.nnn s``. Only allow-listed
fields are shown, every string goes through a :class:`Redactor` (secret
shapes) and :func:`html.escape`; raw request headers, tokens and settings
never appear. Tables wrap long values and scroll inside their box instead of
overflowing the page.

The building blocks (colours from JupyterLab's theme variables, the one table style) are
:mod:`hermes_nb.views.htmlkit`'s, re-exported here. This module is in ``core`` so that records of every
layer can use it without importing upward.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.core.records import Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.views.htmlkit import (
    VERDICT_COLOURS,
    badge,
    box,
    colour_of,
    details,
    esc,
    kv_html,
    pre,
    raw,
    seconds,
    table_html,
)

__all__ = [
    "VERDICT_COLOURS",
    "colour_of",
    "badge",
    "esc",
    "seconds",
    "kv_html",
    "table_html",
    "box",
    "details",
    "raw",
    "pretty_text",
    "exchange_html",
]

_SHAPES = Redactor()


def pretty_text(obj: Any, p: Any, cycle: bool) -> None:
    """IPython's ``_repr_pretty_``: the object's compact text (``text/plain`` in notebooks)."""
    p.text(type(obj).__name__ + "(...)" if cycle else obj._repr_text_())


# --------------------------------------------------------------------------- Exchange

def _excerpt(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def exchange_html(ex: Any, *, timeline: bool = True) -> str:
    """A compact view of one exchange: request line, status, timings, text, error, stream timeline."""
    from hermes_nb.views.timeline import StreamTimeline, timeline_svg

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
    if ex.text or ex.usage or ex.streamed:
        pairs.append(("usage", Usage.from_exchange(ex).line()))
    body = [kv_html(pairs, badges=())]
    if ex.text:
        body.append(pre(_excerpt(ex.text)))
    elif ex.body_text and not ex.ok_status:
        body.append(pre(_excerpt(ex.body_text, 300)))
    if timeline and ex.streamed:
        body.append(timeline_svg(StreamTimeline.from_exchange(ex)))
    return box("exchange", verdict, *body)
