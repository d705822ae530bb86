"""The kernel side of a notebook job's verdict: the three jobs' summaries and the verdict cell.

The notebooks only call these functions and :mod:`hermes_nb.kit.display`;
every decision lives here and is unit tested. The record format itself (the
MIME type the smoke runner reads back) is :mod:`hermes_nb.receipts.verdict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import NotebookFailed
from hermes_nb.core.facts import ADAPTER_CHECK, E2E_SMOKE, ERROR_PREFIX, VERDICTS, WIRE_SPIKE
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.results import artifact_digests
from hermes_nb.kit.target import Target
from hermes_nb.receipts.verdict import VERDICT_MIME, verdict_summary

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = [
    "artifact_digests",
    "record_verdict",
    "wire_summary",
    "check_summary",
    "run_summary",
]

def record_verdict(summary: Mapping[str, Any]) -> None:
    """Display the verdict output, then raise :class:`NotebookFailed` unless it passed."""
    from IPython.display import display

    from hermes_nb.kit.display import verdict_html

    line = f"verdict: {summary['verdict']} ({summary['reason']})"
    display({"text/plain": line, "text/html": verdict_html(summary)}, raw=True,
            metadata={VERDICT_MIME: dict(summary)})
    if summary["verdict"] != "passed":
        first = (summary.get("errors") or [summary["reason"]])[0]
        raise NotebookFailed(f"{summary['job']} {summary['verdict']}: {first}", notebook=str(summary["job"]))


# --------------------------------------------------------------------------- the three jobs

def _timeline(exchange: Any) -> dict[str, Any] | None:
    """The stream's timing marks for the receipt's timeline picture (None when nothing streamed)."""
    if exchange is None or not getattr(exchange, "streamed", False):
        return None
    from hermes_nb.core.timeline import StreamTimeline

    return StreamTimeline.from_exchange(exchange).to_dict()


def wire_summary(report: Any, drift: list[Any], *, target: Target, model: str, contract: str,
                 upstream: list[Any] | None = None) -> dict[str, Any]:
    """Spike verdict: unreachable → blocked; any drift from the contract → failed; else passed.

    ``drift`` holds the proxy-owned differences; ``upstream`` (upstream-owned ones) is recorded
    in the details and never changes the verdict.
    """
    drift_lines = [str(d) for d in drift]
    if not getattr(report, "reachable", False):
        status, reason = "blocked", "unreachable"
        errors = [f"{ERROR_PREFIX}endpoint unreachable: {target.endpoint} (is `hermes proxy start` running? "
                  "a proxy that is not logged in refuses to start: `hermes auth` first)"]
    elif drift_lines:
        status, reason = "failed", "drift"
        errors = [f"wire drift from {contract}: {line}" for line in drift_lines]
    else:
        status, reason, errors = "passed", "matches-contract", []
    return verdict_summary(
        WIRE_SPIKE, status, reason=reason, errors=errors, warnings=list(getattr(report, "warnings", [])),
        endpoint=target.endpoint, model=model, target=target.kind,
        details={"contract": contract, "state": getattr(report, "state", None),
                 "bearer_required": getattr(report, "bearer_required", None),
                 "stream_failure_shape": getattr(report, "stream_failure_shape", None),
                 "server": getattr(report, "server", None), "drift": drift_lines,
                 "timeline": (getattr(report, "timelines", None) or {}).get("chat_stream"),
                 "upstream_differences": [str(d) for d in upstream or []]},
    )


def check_summary(result: Any, *, target: Target) -> dict[str, Any]:
    """Adapter-check verdict: ready → passed; locked/unreachable → blocked; misconfigured/error → failed."""
    state = str(getattr(result, "state", "error"))
    return verdict_summary(
        ADAPTER_CHECK, getattr(result, "verdict", "failed"), reason=state,
        errors=list(getattr(result, "errors", [])), warnings=list(getattr(result, "warnings", [])),
        endpoint=target.endpoint, model=getattr(result, "model", None), target=target.kind,
        hermes_version=getattr(result, "hermes_version", None),
        details={"models": list(getattr(result, "models", [])), "hint": getattr(result, "hint", None),
                 "http_status": getattr(result, "http_status", None)},
    )


def run_summary(result: Any, *, target: Target, config: HermesProxyRuntimeConfig) -> dict[str, Any]:
    """E2E verdict: the runtime result's status (cancelled counts as failed) plus the artifact digests."""
    doc = dict(getattr(result, "result", {}) or {})
    status = str(doc.get("status", "failed"))
    outcome = getattr(result, "outcome", None)
    run_dir = getattr(result, "run_dir", None)
    return verdict_summary(
        E2E_SMOKE, status if status in VERDICTS else "failed",
        reason=str(doc.get("reason") or getattr(outcome, "reason", None) or status),
        errors=list(doc.get("errors") or []), warnings=list(doc.get("warnings") or []),
        endpoint=config.endpoint, model=config.model, target=target.kind,
        artifacts=artifact_digests(run_dir), run_dir=str(run_dir) if run_dir else None,
        details={"run_id": getattr(result, "run_id", None), "exit_code": getattr(result, "exit_code", None),
                 "final_message": getattr(outcome, "final_message", None), "usage": doc.get("usage"),
                 "timeline": _timeline(getattr(result, "exchange", None))},
        redactor=Redactor(config.secrets()),
    )
