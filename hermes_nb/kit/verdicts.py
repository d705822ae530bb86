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
from hermes_nb.proxy.check import CheckResult
from hermes_nb.receipts.verdict import VERDICT_MIME, verdict_summary
from hermes_nb.target import Target

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
    from hermes_nb.core.records import StreamTimeline

    return StreamTimeline.from_exchange(exchange).to_dict()


def wire_summary(report: Any, *, target: Target, model: str, contract: str | None) -> dict[str, Any]:
    """Spike verdict: only proxy-owned facts judge it (the report carries its drift, its upstream differences and
    what it could not judge, :func:`hermes_nb.proxy.contracts.apply_contract`).

    unreachable → blocked (one line, one action); the local-only guard refused the probe → blocked (the fix);
    drift → failed; an upstream that answered 429 → blocked (``rate_limited``, re-run after Retry-After); an
    upstream the proxy reports down (its own 502/504) → blocked (``upstream_down``, the upstream named); else
    passed — what a slow upstream could not answer in time is listed as not judged.
    """
    drift_lines = [str(d) for d in report.drift]
    skipped = list(report.not_judged)
    reasons = {n.reason for n in skipped}
    provider, warnings, hint = report.provider, list(report.warnings), report.action
    if not report.reachable or report.state == "not_local":
        status, reason = "blocked", "unreachable" if not report.reachable else "not_local"
        errors = [f"{ERROR_PREFIX}{report.headline}"]
        warnings = []  # the one line and the one action say it all
    elif drift_lines:
        status, reason = "failed", "drift"
        errors = [f"wire drift from {contract}: {line}" for line in drift_lines]
    elif "rate_limited" in reasons:
        status, reason = "blocked", "rate_limited"
        errors = [f"{ERROR_PREFIX}the upstream answered 429 (rate limited): the wire could not be judged"]
    elif "upstream_down" in reasons:
        first = next(n for n in skipped if n.reason == "upstream_down")
        status, reason = "blocked", "upstream_down"
        errors = [f"{ERROR_PREFIX}the proxy reports its upstream down: {first.detail}"]
    else:
        status, reason, errors, hint = "passed", "matches-contract", [], None
    if skipped and status == "passed":
        warnings.append(f"{len(skipped)} not judged (the upstream's trouble, not the proxy's): "
                        + "; ".join(str(n) for n in skipped[:3]) + (" …" if len(skipped) > 3 else ""))
    return verdict_summary(
        WIRE_SPIKE, status, reason=reason, errors=errors, warnings=warnings, endpoint=target.endpoint, model=model,
        target=target.kind, hermes_version=target.release, provider=provider,
        details={"contract": contract, "state": report.state, "provider": provider, "upstream": report.upstream,
                 "release_source": target.release_source, "matches": list(report.matches),
                 "bearer_required": report.bearer_required, "stream_failure_shape": report.stream_failure_shape,
                 "server": report.server, "drift": drift_lines, "hint": hint,
                 "not_judged": [str(n) for n in skipped], "timeline": report.timelines.get("chat_stream"),
                 "upstream_differences": [str(d) for d in report.upstream_differences]},
    )


def check_summary(result: Any, *, target: Target) -> dict[str, Any]:
    """Adapter-check verdict: ready → passed; locked/unreachable → blocked; misconfigured/error → failed."""
    state = str(getattr(result, "state", "error"))
    return verdict_summary(
        ADAPTER_CHECK, getattr(result, "verdict", "failed"), reason=state,
        errors=list(getattr(result, "errors", [])), warnings=list(getattr(result, "warnings", [])),
        endpoint=target.endpoint, model=getattr(result, "model", None), target=target.kind,
        hermes_version=target.release, provider=getattr(result, "provider", None),
        details={"models": list(getattr(result, "models", [])), "hint": getattr(result, "hint", None),
                 "http_status": getattr(result, "http_status", None),
                 "provider": getattr(result, "provider", None), "upstream": getattr(result, "upstream", None),
                 "model_origin": getattr(result, "model_origin", None),
                 "retry_after_s": getattr(result, "retry_after_s", None)},
    )


def run_summary(result: Any, *, target: Target, config: HermesProxyRuntimeConfig) -> dict[str, Any]:
    """E2E verdict: the runtime result's status (cancelled counts as failed) plus the artifact digests; a
    :class:`~hermes_nb.proxy.check.CheckResult` instead of a run (the model is not in the proxy's list: not sent)
    is the adapter check's verdict: failed, its errors and hint."""
    provider = getattr(result, "provider", None) or target.provider or config.provider
    if isinstance(result, CheckResult):
        check = result
        return verdict_summary(
            E2E_SMOKE, "failed", reason="model-not-listed", errors=list(check.errors),
            warnings=list(check.warnings), endpoint=config.endpoint, model=check.model, target=target.kind,
            hermes_version=target.release, provider=provider,
            details={"hint": check.hint, "models": list(check.models), "provider": provider,
                     "model_origin": check.model_origin, "not_sent": True},
            redactor=Redactor(config.secrets()))
    doc = dict(getattr(result, "result", {}) or {})
    status = str(doc.get("status", "failed"))
    outcome = getattr(result, "outcome", None)
    run_dir = getattr(result, "run_dir", None)
    return verdict_summary(
        E2E_SMOKE, status if status in VERDICTS else "failed",
        reason=str(doc.get("reason") or getattr(outcome, "reason", None) or status),
        errors=list(doc.get("errors") or []), warnings=list(doc.get("warnings") or []),
        endpoint=config.endpoint, model=getattr(getattr(result, "exchange", None), "model", None) or config.model,
        target=target.kind, hermes_version=target.release, provider=provider, artifacts=artifact_digests(run_dir),
        run_dir=str(run_dir) if run_dir else None,
        details={"run_id": getattr(result, "run_id", None), "exit_code": getattr(result, "exit_code", None),
                 "final_message": getattr(outcome, "final_message", None), "usage": doc.get("usage"),
                 "hint": doc.get("hint"), "provider": provider,
                 "timeline": _timeline(getattr(result, "exchange", None))},
        redactor=Redactor(config.secrets()),
    )
