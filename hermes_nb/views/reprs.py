"""An exchange shown compactly: alone (the ``Exchange`` repr), or judged (the console's response panel,
``%%hermes_chat``'s result). Allow-listed fields only; raw request headers and tokens never appear."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.core.timeline import StreamTimeline
from hermes_nb.core.usage import Usage
from hermes_nb.views.htmlkit import box, details, kv_html, pre, seconds
from hermes_nb.views.timeline import timeline_svg

__all__ = ["exchange_html", "judged_html"]


def _excerpt(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _status(ex: Any) -> str | None:
    return f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else None


def exchange_html(ex: Any, *, timeline: bool = True) -> str:
    """One exchange: request line, status, timings, text, error, stream timeline."""
    t = ex.timings
    verdict = "ok" if ex.ok_status and ex.transport_error is None and not ex.in_band_error else (
        "error" if ex.status is not None or ex.transport_error is not None else None)
    pairs: list[tuple[str, Any]] = [
        ("request", f"{ex.request.method} {ex.request.url}"), ("status", _status(ex)),
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


def judged_html(title: str, verdict: str, ex: Any | None, *, reason: str | None, hint: str | None = None,
                extra: Iterable[tuple[str, Any]] = (), errors: Iterable[str] = (), warnings: Iterable[str] = (),
                stopped: bool = False, headers: bool = False, stream: str = "stream timeline",
                redactor: Redactor | None = None) -> str:
    """An exchange under its verdict: reason and hint, status, timings, usage, errors, error envelope, the stream
    timeline and (``headers``) the response headers."""
    pairs: list[tuple[str, Any]] = [("verdict", verdict), ("reason", reason), ("hint", hint), *extra]
    if ex is not None:
        t = ex.timings
        pairs += [("status", _status(ex)), ("time to headers", seconds(t.headers_s)),
                  ("time to first delta", seconds(t.first_delta_s)), ("total", seconds(t.total_s))]
        if ex.text or ex.usage or ex.streamed:
            pairs.append(("usage", Usage.from_exchange(ex).line()))
        if ex.envelope is not None:
            pairs.append(("error envelope", ex.envelope.model_dump(mode="json", exclude_none=True)))
    pairs += [("error", e) for e in errors] + [("warning", w) for w in warnings]
    parts = [kv_html(pairs, badges=("verdict",), redactor=redactor)]
    if ex is not None and ex.streamed:
        parts.append(timeline_svg(StreamTimeline.from_exchange(ex, stopped=stopped), title=stream))
    if ex is not None and ex.headers and headers:
        parts.append(details("response headers", kv_html(sorted(ex.headers.items()), badges=(), redactor=redactor)))
    return box(title, verdict, *parts)
