"""The one place HTML is made: the toolkit (:mod:`~hermes_nb.views.htmlkit`), the stream timeline, and the card of
every record a cell can end with. Records never import this package: IPython asks a record's ``_repr_html_``
(:class:`hermes_nb.core.model.Shown`), which hands it to :func:`html`, dispatched on the record's class name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_nb.proxy.drift import fmt
from hermes_nb.views.htmlkit import box, details, esc, kv_html, seconds, table_html
from hermes_nb.views.reprs import exchange_html
from hermes_nb.views.timeline import timeline_svg

__all__ = ["html", "card"]

_CARDS: dict[str, Callable[[Any], str]] = {"Exchange": exchange_html}


def card(name: str) -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    """Register the card of the record class ``name`` (a decorator)."""
    def register(func: Callable[[Any], str]) -> Callable[[Any], str]:
        _CARDS[name] = func
        return func
    return register


def html(record: Any) -> str:
    """The record's card; a record with none shows its one line."""
    draw = _CARDS.get(type(record).__name__)
    return draw(record) if draw is not None else f"<pre>{esc(record._repr_text_())}</pre>"


@card("CheckResult")
def check_card(result: Any) -> str:
    models = ", ".join(result.models[:8]) + (f", … ({len(result.models)} in all)" if len(result.models) > 8 else "")
    provider = result.provider or result.upstream
    if result.provider:
        extra = [x for x in (result.upstream, f"from {result.provider_source}" if result.provider_source else None)
                 if x]
        provider = result.provider + (f" ({', '.join(extra)})" if extra else "")
    model = None
    if result.model:
        origin = result.model_origin
        model = result.model + (f" ({origin})" if origin and origin != "configured" else "")
    release = result.release + (f" ({result.release_source})" if result.release_source else "")
    pairs: list[tuple[str, Any]] = [("state", result.state), ("verdict", result.verdict),
                                    ("endpoint", result.endpoint), ("provider", provider), ("model", model),
                                    ("models", models or None), ("HTTP status", result.http_status),
                                    ("release", release), ("hint", result.hint)]
    pairs += [("error", e) for e in result.errors] + [("warning", w) for w in result.warnings]
    return box("adapter check", result.state, kv_html(pairs, badges=("state", "verdict")))


def _drift_table(drifts: Any) -> str:
    rows = [{"field": d.field, "expected": fmt(d.expected), "observed": fmt(d.observed), "owner": d.owner}
            for d in drifts]
    return table_html(rows, ("field", "expected", "observed", "owner"))


@card("Drift")
def drift_card(drift: Any) -> str:
    return box("wire contract", "failed" if drift.owner == "proxy" else None, _drift_table([drift]))


@card("DriftList")
def drift_list_card(drifts: Any) -> str:
    if not drifts:
        return box("wire contract", "passed", "<div>the proxy matches the recorded wire contract.</div>",
                   headline=drifts.headline)
    return box("wire contract", "failed", _drift_table(drifts), headline=drifts.headline)


@card("WireReport")
def wire_report_card(report: Any) -> str:
    provider = (f"{report.provider} ({report.upstream})" if report.provider and report.upstream
                else report.provider or report.upstream)
    parts = [kv_html([("endpoint", report.endpoint), ("provider", provider), ("state", report.state),
                      ("reachable", report.reachable), ("release", report.release),
                      ("behaves as", ", ".join(report.matches) or None), ("bearer required", report.bearer_required),
                      ("stream failure shape", report.stream_failure_shape), ("server", report.server_product),
                      ("contract", report.contract), ("action", report.action),
                      ("elapsed", seconds(report.elapsed_s))], badges=("state",))]
    if report.drift:
        parts += [f"<div><b>{esc(report.headline)}</b></div>", _drift_table(report.drift)]
    if report.upstream_differences:
        parts.append(details(f"upstream differences: {len(report.upstream_differences)} (information: the "
                             "upstream's fields, or a stream nobody can attribute; never drift)",
                             _drift_table(report.upstream_differences)))
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
