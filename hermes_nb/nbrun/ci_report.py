"""The smoke as CI systems read it: one plain document behind the JUnit XML and the Markdown summary.

:func:`ci_report` turns a :class:`~hermes_nb.nbrun.smoke.SmokeResult` into plain data (redacted), so
the writers (:mod:`hermes_nb.receipts.junit`, :mod:`hermes_nb.receipts.summary`) need nothing from
this layer. Per notebook it keeps what an operator acts on: the reason, the errors, the hint the
adapter check gave, the drift lines of the wire-format spike, and for a blocked notebook the
*operator action* (the hint, else the first error, else the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_nb.core.facts import EXIT_BLOCKED, exit_code_for
from hermes_nb.core.redaction import Redactor

__all__ = ["BLOCKED_EXIT_CHOICES", "CI_REPORT_SCHEMA", "ci_report", "smoke_exit_code", "operator_action",
           "result_provider",
           "write_ci_outputs", "not_started_report"]

CI_REPORT_SCHEMA = "hermes-nb.smoke-ci.v1"
#: what ``--blocked-exit`` may map a blocked smoke to: 3 (default: its own code), 0 (pass), 1 (fail)
BLOCKED_EXIT_CHOICES = (3, 0, 1)


def smoke_exit_code(verdict: str, blocked_exit: int = EXIT_BLOCKED) -> int:
    """The documented exit code of a smoke verdict, with blocked mapped to ``blocked_exit``."""
    if blocked_exit not in BLOCKED_EXIT_CHOICES:
        raise ValueError(f"blocked_exit must be one of {BLOCKED_EXIT_CHOICES}, got {blocked_exit!r}")
    return blocked_exit if verdict == "blocked" else exit_code_for(verdict)


def result_provider(result: Any) -> str | None:
    """The provider a smoke ran against: what its notebooks saw (``/health``), else the target's."""
    seen = [(r.summary or {}).get("provider") for r in result.runs]
    return next((p for p in seen if p), None) or getattr(result.target, "provider", None)


def operator_action(summary: dict[str, Any] | None, reason: str, errors: list[str]) -> str:
    """What an operator does about a blocked notebook: the check's hint, else the first error, else the reason."""
    details = (summary or {}).get("details") or {}
    hint = details.get("hint") if isinstance(details, dict) else None
    if hint:
        return str(hint)
    return str(errors[0]) if errors else reason


def ci_report(result: Any, *, blocked_exit: int = EXIT_BLOCKED, redactor: Redactor | None = None,
              locate: Callable[[Path], str] | None = None) -> dict[str, Any]:
    """Plain, redacted data for JUnit and the step summary. ``locate`` maps a local receipt path to the
    place it is published at (a URL for shared storage); default ``str``."""
    where = locate or str
    notebooks = []
    for run in result.runs:
        summary = run.summary or {}
        details = summary.get("details") or {}
        errors = [str(e) for e in run.errors]
        notebooks.append({
            "name": run.name,
            "verdict": run.verdict,
            "status": run.status,
            "reason": run.reason,
            "errors": errors,
            "hint": details.get("hint") if isinstance(details, dict) else None,
            "drift": [str(d) for d in (details.get("drift") or [])] if isinstance(details, dict) else [],
            "not_judged": [str(d) for d in (details.get("not_judged") or [])] if isinstance(details, dict) else [],
            "operator_action": operator_action(summary, run.reason, errors) if run.verdict == "blocked" else None,
            "duration_s": round(run.duration_s, 3),
            "started_at": run.started_at or None,
            "receipt": where(run.receipt_path) if run.receipt_path else None,
        })
    target = result.target
    report = {
        "schema": CI_REPORT_SCHEMA,
        "provider": result_provider(result),
        "verdict": result.verdict,
        "exit_code": smoke_exit_code(result.verdict, blocked_exit),
        "blocked_exit": blocked_exit,
        "run_id": result.run_id,
        "target_kind": target.kind,
        "endpoint": target.endpoint,
        "hermes_version": target.hermes_version,
        "target_evidence": target.evidence,
        "out": where(result.out_dir),
        "duration_s": round(result.duration_s, 3),
        "notebooks": notebooks,
    }
    return (redactor or Redactor(target.secrets)).data(report)


def not_started_report(error: str, *, target_kind: str, blocked_exit: int = EXIT_BLOCKED,
                       hermes_version: str | None = None, redactor: Redactor | None = None) -> dict[str, Any]:
    """The CI report of a smoke that could not start its target (the rig refused or did not come up):
    one blocked case named ``rig`` carrying the reason as the operator action, so CI shows why."""
    report = {
        "schema": CI_REPORT_SCHEMA, "provider": None, "verdict": "blocked",
        "exit_code": smoke_exit_code("blocked", blocked_exit),
        "blocked_exit": blocked_exit, "run_id": None, "target_kind": target_kind, "endpoint": None,
        "hermes_version": hermes_version, "target_evidence": None, "out": None, "duration_s": 0.0,
        "notebooks": [{"name": target_kind, "verdict": "blocked", "status": "not_started", "reason": "not started",
                       "errors": [error], "hint": None, "drift": [], "operator_action": error,
                       "duration_s": 0.0, "started_at": None, "receipt": None}],
    }
    return (redactor or Redactor()).data(report)


def write_ci_outputs(report: dict[str, Any], *, redactor: Redactor, junit_xml: str | None = None,
                     summary_md: str | None = None, step_summary: str | None = None) -> dict[str, str]:
    """Write the JUnit XML, the Markdown summary, and append the summary to ``$GITHUB_STEP_SUMMARY``.

    Returns ``{"junit_xml": path, "summary_md": path, "step_summary": path}`` for what was written.
    """
    from hermes_nb.receipts.junit import write_junit
    from hermes_nb.receipts.summary import write_summary

    written: dict[str, str] = {}
    if junit_xml:
        written["junit_xml"] = str(write_junit(report, junit_xml, redactor=redactor))
    if summary_md:
        written["summary_md"] = str(write_summary(report, summary_md, redactor=redactor))
    if step_summary:
        written["step_summary"] = str(write_summary(report, step_summary, redactor=redactor, append=True))
    return written
