"""Where HTML is made (the toolkit is :mod:`.htmlkit`): :func:`html`, the card of each record a cell can end with, by
class name (records never import the views); allow-listed fields only, escaped and masked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hermes_nb.core.records import StreamTimeline, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.run import artifact_digests
from hermes_nb.proxy.report import fmt
from hermes_nb.views.htmlkit import box, details, esc, kv_html, pre, seconds, table_html, timeline_svg


def html(record: Any) -> str:
    """The record's card; a record with none shows its one line."""
    draw = _CARDS.get(type(record).__name__)
    return draw(record) if draw is not None else f"<pre>{esc(record._repr_text_())}</pre>"


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


def _noted(value: str | None, *notes: str | None) -> str | None:  # ``value (note, note)``, the notes that are set
    shown = [n for n in notes if n]
    return value + (f" ({', '.join(shown)})" if shown else "") if value else None


def check_card(result: Any) -> str:
    models = ", ".join(result.models[:8]) + (f", … ({len(result.models)} in all)" if len(result.models) > 8 else "")
    source = f"from {result.provider_source}" if result.provider_source else None
    pairs: list[tuple[str, Any]] = [
        ("state", result.state), ("verdict", result.verdict), ("endpoint", result.endpoint),
        ("provider", _noted(result.provider, result.upstream, source) or result.upstream),
        ("model", _noted(result.model, result.model_origin if result.model_origin != "configured" else None)),
        ("models", models or None), ("HTTP status", result.http_status),
        ("release", _noted(result.release, result.release_source)), ("hint", result.hint)]
    pairs += [("error", e) for e in result.errors] + [("warning", w) for w in result.warnings]
    return box("adapter check", result.state, kv_html(pairs, badges=("state", "verdict")))


def drift_table(drifts: Any) -> str:
    """One row per difference: field, expected, observed, and who owns the field."""
    rows = [{"field": d.field, "expected": fmt(d.expected), "observed": fmt(d.observed), "owner": d.owner}
            for d in drifts]
    return table_html(rows, ("field", "expected", "observed", "owner"))


def drift_card(drifts: Any) -> str:
    body = drift_table(drifts) if drifts else "<div>the proxy matches the recorded wire contract.</div>"
    return box("wire contract", "failed" if drifts else "passed", body, headline=drifts.headline)


def one_drift_card(drift: Any) -> str:
    return box("wire contract", "failed" if drift.owner == "proxy" else None, drift_table([drift]),
               headline=str(drift))


def wire_card(report: Any) -> str:
    provider = _noted(report.provider, report.upstream) or report.upstream
    parts = [kv_html([("endpoint", report.endpoint), ("provider", provider), ("state", report.state),
                      ("reachable", report.reachable), ("release", report.release),
                      ("behaves as", ", ".join(report.matches) or None), ("bearer required", report.bearer_required),
                      ("stream failure shape", report.stream_failure_shape), ("server", report.server_product),
                      ("contract", report.contract), ("action", report.action),
                      ("elapsed", seconds(report.elapsed_s))], badges=("state",))]
    if report.drift:
        parts += [f"<div><b>{esc(report.headline)}</b></div>", drift_table(report.drift)]
    if report.upstream_differences:
        parts.append(details(f"upstream differences: {len(report.upstream_differences)} (information: the "
                             "upstream's fields, or a stream nobody can attribute; never drift)",
                             drift_table(report.upstream_differences)))
    rows = [{"route": r.name, "method": r.method, "path": r.path, "status": r.status, "outcome": r.outcome,
             "body": r.body_kind, "error type": r.error_type or r.transport_error, "elapsed": seconds(r.elapsed_s)}
            for r in report.routes]
    parts += ["<div><b>routes</b></div>", table_html(rows, ("route", "method", "path", "status", "outcome", "body",
                                                            "error type", "elapsed"), badges=())]
    for title, cases in (("auth handoff</b> (GET /v1/models)", report.auth),
                         ("admission</b> (GET /health)", report.admission)):
        if cases:
            parts += [f"<div><b>{title}</div>", table_html([c.model_dump() for c in cases],
                                                           ("case", "header", "status", "error_type", "outcome"),
                                                           badges=())]
    for name, marks in report.timelines.items():
        parts.append(f"<div><b>stream timeline</b> ({name})</div>" + timeline_svg(marks, title=f"{name} stream"))
    if report.warnings:
        parts.append("<ul>" + "".join(f"<li>{esc(w)}</li>" for w in report.warnings) + "</ul>")
    if report.not_judged:
        parts.append("<div><b>not judged</b> (the upstream's trouble, not the proxy's)</div><ul>"
                     + "".join(f"<li>{esc(n)}</li>" for n in report.not_judged) + "</ul>")
    return box("wire-format report", report.verdict, *parts, headline=report.headline)


def run_card(run: Any) -> str:
    doc, out, ex = run.result, run.outcome, run.exchange
    t = ex.timings if ex is not None else None
    pairs: list[tuple[str, Any]] = [
        ("status", doc.get("status")), ("exit_code", run.exit_code), ("mission_id", doc.get("mission_id")),
        ("runtime", doc.get("runtime")), ("provider", doc.get("provider")),
        ("reason", doc.get("reason") or (out.reason if out else None)), ("hint", out.hint if out else None),
        ("headers / first delta / total", " / ".join(seconds(v) or "—" for v in (
            t.headers_s, t.first_delta_s, t.total_s)) if t else None),
        ("usage", Usage.from_exchange(ex).line() if ex is not None else None),
        ("final message", out.final_message if out else None),
    ]
    pairs += [("error", e) for e in doc.get("errors") or []] + [("warning", w) for w in (out.warnings if out else [])]
    parts = [kv_html(pairs, badges=("status",))]
    if ex is not None and ex.streamed:
        parts.append(timeline_svg(StreamTimeline.from_exchange(ex), title="answer stream"))
    if run.text:
        parts.append("<div><b>assistant text (stdout)</b></div>" + pre(run.text))
    digests = artifact_digests(run.run_dir)
    if digests:
        parts.append("<div><b>run artifacts</b></div>" + table_html(
            [{"artifact": k, "sha256": v} for k, v in digests.items()], ("artifact", "sha256")))
    return box("runtime result", doc.get("status"), *parts)


def chat_card(chat: Any) -> str:
    out = chat.outcome
    return judged_html("hermes chat", chat.verdict, chat.exchange, reason=chat.reason, hint=out.hint if out else None,
                       errors=out.errors if out else (), warnings=[*chat.warnings, *(out.warnings if out else [])],
                       stopped=chat.stopped, stream="answer stream")


_CARDS: dict[str, Callable[[Any], str]] = {
    "Exchange": exchange_html, "CheckResult": check_card, "DriftList": drift_card, "Drift": one_drift_card,
    "WireReport": wire_card, "RunResult": run_card, "ChatResult": chat_card,
}
