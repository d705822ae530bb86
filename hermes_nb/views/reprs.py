"""An exchange shown compactly: alone (the ``Exchange`` repr) or under its verdict (the console's response panel,
``%%hermes_chat``'s result). Allow-listed fields only; raw request headers and tokens never appear."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_nb.core.records import StreamTimeline, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.views.htmlkit import box, details, kv_html, pre, seconds
from hermes_nb.views.timeline import timeline_svg

__all__ = ["exchange_html", "judged_html"]


def _excerpt(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _rows(ex: Any) -> list[tuple[str, Any]]:
    t, env, cut = ex.timings, ex.envelope, ex.transport_error
    rows: list[tuple[str, Any]] = [
        ("request", f"{ex.request.method} {ex.request.url}"),
        ("status", f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else None),
        ("content type", ex.content_type),
        ("headers / first delta / total", " / ".join(seconds(v) or "—" for v in (t.headers_s, t.first_delta_s,
                                                                              t.total_s)))]
    if ex.streamed:
        rows.append(("stream", f"{len(ex.events)} events, [DONE] {'seen' if ex.done else 'not seen'}, "
                               f"finish_reason {ex.finish_reason or '—'}"))
    if env is not None:
        rows.append(("error envelope", {k: v for k, v in (("type", env.type), ("code", env.code),
                                                           ("message", env.message)) if v is not None}))
    if cut is not None:
        rows.append(("transport", f"{cut.kind} ({cut.phase}): {cut.message}"))
    if ex.retry_after_s is not None:
        rows.append(("retry after", seconds(ex.retry_after_s)))
    if ex.text or ex.usage or ex.streamed:
        rows.append(("usage", Usage.from_exchange(ex).line()))
    return rows


def exchange_html(ex: Any) -> str:
    """One exchange: request line, status, timings, usage, error, the text's excerpt, the stream timeline."""
    ok = ex.ok_status and ex.transport_error is None and not ex.in_band_error
    verdict = "ok" if ok else "error" if ex.status is not None or ex.transport_error is not None else None
    body = [kv_html(_rows(ex), badges=())]
    if ex.text or (ex.body_text and not ex.ok_status):
        body.append(pre(_excerpt(ex.text) if ex.text else _excerpt(ex.body_text, 300)))
    if ex.streamed:
        body.append(timeline_svg(StreamTimeline.from_exchange(ex)))
    return box("exchange", verdict, *body)


def judged_html(title: str, verdict: str, ex: Any | None, *, reason: str | None, hint: str | None = None,
                extra: Iterable[tuple[str, Any]] = (), errors: Iterable[str] = (), warnings: Iterable[str] = (),
                stopped: bool = False, headers: bool = False, stream: str = "stream timeline",
                redactor: Redactor | None = None) -> str:
    """An exchange under its verdict, reason and hint: its rows, errors and warnings, the stream timeline and
    (``headers``) the response headers."""
    pairs = [("verdict", verdict), ("reason", reason), ("hint", hint), *extra, *(_rows(ex) if ex else [])]
    pairs += [("error", e) for e in errors] + [("warning", w) for w in warnings]
    parts = [kv_html(pairs, badges=("verdict",), redactor=redactor)]
    if ex is not None and ex.streamed:
        parts.append(timeline_svg(StreamTimeline.from_exchange(ex, stopped=stopped), title=stream))
    if ex is not None and ex.headers and headers:
        parts.append(details("response headers", kv_html(sorted(ex.headers.items()), badges=(), redactor=redactor)))
    return box(title, verdict, *parts)
