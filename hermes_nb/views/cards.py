"""The card of each record a cell can end with: the adapter check, the wire report and its drift, a run's result.

Allow-listed fields only; every string escaped and masked by secret shape (:mod:`hermes_nb.views.htmlkit`).
Registered with :func:`hermes_nb.views.card` by the record's class name.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.core.records import StreamTimeline, Usage
from hermes_nb.harness.results import artifact_digests
from hermes_nb.proxy.drift import fmt
from hermes_nb.views.htmlkit import box, details, esc, kv_html, pre, seconds, table_html
from hermes_nb.views.registry import card
from hermes_nb.views.timeline import timeline_svg

__all__ = ["drift_table"]


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


def drift_table(drifts: Any) -> str:
    """One row per difference: field, expected, observed."""
    rows = [{"field": d.field, "expected": fmt(d.expected), "observed": fmt(d.observed)} for d in drifts]
    return table_html(rows, ("field", "expected", "observed"))


@card("DriftList")
def drift_card(drifts: Any) -> str:
    if not drifts:
        return box("wire contract", "passed", "<div>the proxy matches the recorded wire contract.</div>",
                   headline=drifts.headline)
    return box("wire contract", "failed", drift_table(drifts), headline=drifts.headline)


@card("Drift")
def one_drift_card(drift: Any) -> str:
    return box("wire contract", "failed", drift_table([drift]), headline=str(drift))


@card("WireReport")
def wire_card(report: Any) -> str:
    provider = (f"{report.provider} ({report.upstream})" if report.provider and report.upstream
                else report.provider or report.upstream)
    head = kv_html([("endpoint", report.endpoint), ("provider", provider), ("state", report.state),
                    ("reachable", report.reachable), ("bearer required", report.bearer_required),
                    ("stream failure shape", report.stream_failure_shape), ("server", report.server_product),
                    ("contract", report.contract), ("behaves as", ", ".join(report.matches) or None),
                    ("action", report.action), ("elapsed", seconds(report.elapsed_s))], badges=("state",))
    parts = [head]
    if report.drift:
        parts += [f"<div><b>{esc(report.headline)}</b></div>", drift_table(report.drift)]
    if report.upstream_differences:
        parts.append(details(f"upstream differences: {len(report.upstream_differences)} (information: the "
                             "upstream owns these fields, never drift)", drift_table(report.upstream_differences)))
    rows = [{"route": r.name, "method": r.method, "path": r.path, "status": r.status, "outcome": r.outcome,
             "body": r.body_kind, "error type": r.error_type or r.transport_error, "elapsed": seconds(r.elapsed_s)}
            for r in report.routes]
    parts += ["<div><b>routes</b></div>",
              table_html(rows, ("route", "method", "path", "status", "outcome", "body", "error type", "elapsed"),
                         badges=())]
    if report.auth:
        parts += ["<div><b>auth handoff</b> (GET /v1/models)</div>",
                  table_html([a.model_dump() for a in report.auth], ("case", "header", "status", "error_type",
                                                                      "outcome"), badges=())]
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
