"""What a probe could not judge, and why: the upstream's trouble is never the proxy's drift.

A contract judges the proxy. When the upstream behind it did not answer in time (``upstream_slow``),
the proxy answered its own 502/504 instead (``upstream_down``) or the answer was a 429
(``rate_limited``), the routes the contract expects the upstream to answer tell nothing about the
proxy: they are listed with their reason and left out of the comparison
(:func:`hermes_nb.proxy.contracts.judge`). Routes the proxy answers itself are always judged.
Pure: sections in, :class:`~hermes_nb.proxy.drift.NotJudged` records out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_nb.core.records import ErrorEnvelope
from hermes_nb.proxy.drift import NotJudged, NotJudgedReason
from hermes_nb.proxy.probe import ROUTES
from hermes_nb.proxy.report import WireReport
from hermes_nb.wire.reading import RATE_LIMIT_CODES, UPSTREAM_DOWN_CODES

__all__ = ["section_not_judged"]


def _why_not(exp: Mapping[str, Any], got: Mapping[str, Any],
             retry: float | None) -> tuple[NotJudgedReason, str] | None:
    """``(reason, detail)`` when an observed answer cannot judge the expected one."""
    if got.get("outcome") == "skipped" and got.get("transport_error") != "upstream_slow":
        return "probe_deadline", "not sent: the probe's overall deadline ran out"
    if exp.get("answered_by") != "upstream":
        return None  # the proxy's own answer: always judged
    codes = ErrorEnvelope(type=got.get("error_type"), code=got.get("error_code")).codes
    if got.get("answered_by") == "proxy" and codes & UPSTREAM_DOWN_CODES:
        return "upstream_down", f"the proxy answered {got.get('status')} {got.get('error_type')}: " \
                                f"{got.get('error_message') or ''}".rstrip(": ")
    if got.get("status") == 429 or codes & RATE_LIMIT_CODES:
        after = f"; Retry-After {retry:g} s" if retry is not None else ""
        return "rate_limited", f"HTTP {got.get('status')} from the upstream{after}"
    if got.get("outcome") == "skipped":
        return "upstream_slow", "not sent: the upstream was too slow for an earlier forwarded request"
    if got.get("outcome") == "timeout":
        return "upstream_slow", f"no answer within the probe's per-request deadline ({got.get('transport_error')})"
    if got.get("ended") in ("deadline", "read_timeout"):
        return "upstream_slow", f"the answer did not end within the probe's per-request deadline ({got.get('ended')})"
    return None


def section_not_judged(section: Mapping[str, Any], observed: Mapping[str, Any],
                       report: WireReport) -> list[NotJudged]:
    """The entries of ``section`` (expected) that ``observed`` (``contract_section(report)``) cannot judge."""
    out: list[NotJudged] = []
    obs_routes = {r.get("name"): r for r in observed.get("routes", [])}
    results = {r.name: r for r in report.routes}
    labels = {spec.name: spec.label for spec in ROUTES}
    for exp in section.get("routes", []):
        got = obs_routes.get(exp.get("name"))
        result = results.get(exp.get("name"))
        if got is None or result is None:
            continue
        got = {**got, "transport_error": result.transport_error}
        why = _why_not(exp, got, result.retry_after_s)
        if why is not None:
            retry_after_s = result.retry_after_s if why[0] == "rate_limited" else None
            out.append(NotJudged(field=f"routes[{labels.get(exp['name'], exp['name'])}]", reason=why[0],
                                 detail=why[1], retry_after_s=retry_after_s))
    cases = {c.case: c for c in report.auth}
    for case, exp in (section.get("auth") or {}).items():
        seen = cases.get(case)
        if seen is None:
            continue
        got = {"status": seen.status, "error_type": seen.error_type, "outcome": seen.outcome,
               "answered_by": seen.answered_by, "transport_error": seen.transport_error}
        why = _why_not(exp, got, seen.retry_after_s)
        if why is not None:
            out.append(NotJudged(field=f"auth[{case}]", reason=why[0], detail=why[1],
                                 retry_after_s=seen.retry_after_s if why[0] == "rate_limited" else None))
    if report.bearer_required is None and any(n.field.startswith("auth[") for n in out):
        out.append(NotJudged(field="bearer_required", reason=next(n.reason for n in out if n.field.startswith("auth[")),
                             detail="the auth cases it is told from were not judged"))
    return out
