"""The card of each record a cell can end with (registered by class name): the adapter check, the wire report and
its drift, a run's result, a ``%%hermes_chat`` answer. Allow-listed fields only, escaped and masked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_nb.core.records import StreamTimeline, Usage
from hermes_nb.harness.run import artifact_digests
from hermes_nb.proxy.drift import fmt
from hermes_nb.views.htmlkit import box, details, esc, kv_html, pre, seconds, table_html
from hermes_nb.views.reprs import exchange_html, judged_html
from hermes_nb.views.timeline import timeline_svg

__all__ = ["card", "html", "drift_table"]

_CARDS: dict[str, Callable[[Any], str]] = {"Exchange": exchange_html}


def card(name: str) -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    """Register the card of the record class ``name`` (a decorator): records never import the views."""
    def register(func: Callable[[Any], str]) -> Callable[[Any], str]:
        _CARDS[name] = func
        return func
    return register


def html(record: Any) -> str:
    """The record's card; a record with none shows its one line."""
    draw = _CARDS.get(type(record).__name__)
    return draw(record) if draw is not None else f"<pre>{esc(record._repr_text_())}</pre>"


def _noted(value: str | None, *notes: str | None) -> str | None:
    """``value (note, note)`` with the notes that are set."""
    shown = [n for n in notes if n]
    return value + (f" ({', '.join(shown)})" if shown else "") if value else None


@card("CheckResult")
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


@card("DriftList")
def drift_card(drifts: Any) -> str:
    if not drifts:
        return box("wire contract", "passed", "<div>the proxy matches the recorded wire contract.</div>",
                   headline=drifts.headline)
    return box("wire contract", "failed", drift_table(drifts), headline=drifts.headline)


@card("Drift")
def one_drift_card(drift: Any) -> str:
    return box("wire contract", "failed" if drift.owner == "proxy" else None, drift_table([drift]),
               headline=str(drift))


@card("WireReport")
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


@card("RunResult")
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


@card("ChatResult")
def chat_card(chat: Any) -> str:
    out = chat.outcome
    return judged_html("hermes chat", chat.verdict, chat.exchange, reason=chat.reason, hint=out.hint if out else None,
                       errors=out.errors if out else (), warnings=[*chat.warnings, *(out.warnings if out else [])],
                       stopped=chat.stopped, stream="answer stream")
