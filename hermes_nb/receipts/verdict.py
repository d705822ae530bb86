"""The verdict record: a notebook's verdict cell displays it in an output's ``metadata`` (:data:`VERDICT_MIME`) and
the smoke runner reads it back (papermill cannot hand values back)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_nb.core.facts import VERDICTS
from hermes_nb.core.redaction import Redactor

VERDICT_MIME = "application/vnd.hermes-nb.verdict+json"
VERDICT_SCHEMA = "hermes-nb.verdict.v1"


def verdict_summary(job: str, status: str, *, reason: str, errors: list[str] | None = None,
                    warnings: list[str] | None = None, endpoint: str | None = None, model: str | None = None,
                    target: str | None = None, hermes_version: str | None = None,
                    artifacts: Mapping[str, str] | None = None, run_dir: str | None = None,
                    details: Mapping[str, Any] | None = None, provider: str | None = None,
                    redactor: Redactor | None = None) -> dict[str, Any]:
    """The machine summary of one notebook job (redacted)."""
    if status not in VERDICTS:
        raise ValueError(f"unknown verdict {status!r} (expected one of {', '.join(VERDICTS)})")
    summary = {"schema": VERDICT_SCHEMA, "job": job, "verdict": status, "reason": reason, "errors": list(errors or []),
               "warnings": list(warnings or []), "endpoint": endpoint, "model": model, "target": target,
               "hermes_version": hermes_version, "provider": provider, "artifacts": dict(artifacts or {}),
               "run_dir": run_dir, "details": dict(details or {})}
    return (redactor or Redactor()).data(summary)


def find_verdict(nb: Mapping[str, Any]) -> dict[str, Any] | None:
    found: dict[str, Any] | None = None
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            value = (output.get("metadata") or {}).get(VERDICT_MIME)
            if isinstance(value, Mapping) and value.get("schema") == VERDICT_SCHEMA:
                found = dict(value)
    return found


def operator_action(summary: Mapping[str, Any] | None, reason: str | None = None,
                    errors: list[str] | None = None) -> str:
    """What an operator does about a blocked notebook: the check's hint, else the first error, else the reason."""
    summary = summary or {}
    details = summary.get("details") or {}
    hint = details.get("hint") if isinstance(details, Mapping) else None
    if hint:
        return str(hint)
    errors = list(summary.get("errors") or []) if errors is None else errors
    return str(errors[0]) if errors else str(reason or summary.get("reason") or "")


#: the adapter check's states as the proxy's own (what a receipt and index.html label a target with)
_CHECK_STATES = {"ready": "live", "locked": "stale", "unreachable": "unreachable"}


def proxy_state(summary: Mapping[str, Any] | None) -> str | None:
    """The proxy's state a notebook observed: ``live``, ``stale`` (its credentials refused), ``unreachable`` or
    None."""
    summary = summary or {}
    details = summary.get("details") or {}
    state = details.get("state") if isinstance(details, Mapping) else None
    if state in ("live", "stale", "unreachable"):
        return str(state)
    if summary.get("job") == "adapter_check":
        return _CHECK_STATES.get(str(summary.get("reason")))
    return None
