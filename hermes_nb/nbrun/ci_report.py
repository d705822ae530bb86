"""The smoke as CI systems read it: one plain document behind the JUnit XML and the Markdown summary.

:func:`ci_report` turns a :class:`~hermes_nb.nbrun.smoke.SmokeResult` into plain data (redacted), so
the writers (:mod:`hermes_nb.receipts.ci`) need nothing from
this layer. Per notebook it keeps what an operator acts on: the reason, the errors, the hint the
adapter check gave, the drift lines of the wire-format spike, and for a blocked notebook the
*operator action* (the hint, else the first error, else the reason). Execution statuses are worded
for people (:data:`STATUS_WORDS`: "a cell raised", not ``cell_error``).

Where the receipts are (:func:`ci_context`): paths relative to the artifact root (``$GITHUB_WORKSPACE``,
``$CI_PROJECT_DIR``, else the working directory), the way a CI job uploads them, plus the CI run's page
(``$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID``, GitLab's ``$CI_JOB_URL``) and, on
GitLab, each receipt's own URL in the job's artifacts (``$CI_JOB_URL/artifacts/file/<path>``).
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.facts import EXIT_BLOCKED, EXIT_USAGE, exit_code_for, exit_code_for_signal
from hermes_nb.core.io import iso_now, new_run_id, prove_writable
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.verdict import operator_action, proxy_state

__all__ = ["BLOCKED_EXIT_CHOICES", "CI_REPORT_SCHEMA", "STATUS_WORDS", "CiContext", "ci_context", "ci_report",
           "smoke_exit_code", "operator_action", "write_ci_outputs", "not_started_report",
           "check_output_paths", "step_summary_path", "with_problems"]

CI_REPORT_SCHEMA = "hermes-nb.smoke-ci.v1"
#: what ``--blocked-exit`` may map a blocked smoke to: 3 (default: its own code), 0 (pass), 1 (fail)
BLOCKED_EXIT_CHOICES = (3, 0, 1)
#: an execution status (:class:`~hermes_nb.nbrun.execute.NotebookRun`) as CI readers see it
STATUS_WORDS = {
    "completed": "completed", "cell_error": "a cell raised", "timeout": "cell timeout",
    "dead_kernel": "kernel died", "kernel_error": "kernel did not start", "runner_error": "runner error",
    "interrupted": "cancelled", "pending": "not started", "not_started": "not started",
}


def smoke_exit_code(verdict: str, blocked_exit: int = EXIT_BLOCKED, cancelled_by: str | None = None) -> int:
    """The documented exit code of a smoke verdict, with blocked mapped to ``blocked_exit`` and a run stopped
    by a signal ending with 128 + its number (SIGINT 130, SIGTERM 143)."""
    if blocked_exit not in BLOCKED_EXIT_CHOICES:
        raise ValueError(f"blocked_exit must be one of {BLOCKED_EXIT_CHOICES}, got {blocked_exit!r}")
    if cancelled_by:
        return exit_code_for_signal(signal.Signals[cancelled_by].value)
    return blocked_exit if verdict == "blocked" else exit_code_for(verdict)


@dataclass(frozen=True)
class CiContext:
    """Where a CI job keeps its artifacts and where its run can be seen."""

    #: receipt paths are written relative to this directory (what the job uploads from)
    artifact_root: Path
    #: the CI run's page (GitHub Actions run, GitLab job), None outside CI
    run_url: str | None = None
    #: GitLab: ``$CI_JOB_URL/artifacts/file``, a prefix each artifact's own path can be appended to
    file_url: str | None = None

    def path(self, location: Any) -> str:
        """A receipt's place: a URL as is, a local path relative to the artifact root when it is under it."""
        text = str(location)
        if "://" in text:
            return text
        path = Path(text)
        try:
            return path.resolve().relative_to(self.artifact_root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def url(self, relative: str | None) -> str | None:
        """The receipt's own URL in the CI job's artifacts (GitLab), None elsewhere or for a non-relative path."""
        if not relative or self.file_url is None or "://" in relative or Path(relative).is_absolute():
            return None
        return f"{self.file_url}/{relative}"


def ci_context(environ: Mapping[str, str] | None = None) -> CiContext:
    """GitHub Actions, GitLab CI or neither, from the environment they set."""
    env = os.environ if environ is None else environ
    if env.get("GITLAB_CI") or env.get("CI_JOB_URL"):
        job = env.get("CI_JOB_URL") or None
        return CiContext(Path(env.get("CI_PROJECT_DIR") or Path.cwd()), job, f"{job}/artifacts/file" if job else None)
    server, repository, run_id = (env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    run_url = (f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}"
               if server and repository and run_id else None)
    return CiContext(Path(env.get("GITHUB_WORKSPACE") or Path.cwd()), run_url)


def _base(ctx: CiContext, *, blocked_exit: int) -> dict[str, Any]:
    return {"schema": CI_REPORT_SCHEMA, "blocked_exit": blocked_exit, "hostname": socket.gethostname(),
            "ci_run_url": ctx.run_url}


def ci_report(result: Any, *, blocked_exit: int = EXIT_BLOCKED, redactor: Redactor | None = None,
              locate: Callable[[Path], str] | None = None,
              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Plain, redacted data for JUnit and the step summary. ``locate`` maps a local receipt path to the
    place it is published at (a URL for shared storage); default: relative to the CI artifact root."""
    ctx = ci_context(environ)
    where = locate or ctx.path
    notebooks = []
    for run in result.runs:
        summary = run.summary or {}
        details = summary.get("details") or {}
        decided = summary.get("verdict") == run.verdict  # its verdict cell decided: it raised NotebookFailed to stop
        errors = [str(e) for e in run.errors if not (decided and str(e).startswith("NotebookFailed: "))]
        receipt = where(run.receipt_path) if run.receipt_path else None
        status = STATUS_WORDS.get(run.status, run.status.replace("_", " "))
        notebooks.append({
            "name": run.name,
            "verdict": run.verdict,
            "status": status,
            # what kind of failure, in a word or two: the notebook's own reason when its verdict cell decided
            "kind": str(summary.get("reason")) if decided else status,
            "reason": run.reason,
            "errors": errors,
            "hint": details.get("hint") if isinstance(details, dict) else None,
            "drift": [str(d) for d in (details.get("drift") or [])] if isinstance(details, dict) else [],
            "not_judged": [str(d) for d in (details.get("not_judged") or [])] if isinstance(details, dict) else [],
            "operator_action": operator_action(summary, run.reason, errors) if run.verdict == "blocked" else None,
            "duration_s": round(run.duration_s, 3),
            "started_at": run.started_at or None,
            "receipt": receipt,
            "receipt_url": ctx.url(receipt),
        })
    target = result.target
    cancelled_by = getattr(result, "cancelled_by", None)
    problems = [str(p) for p in getattr(result, "problems", ())]  # its receipts' outputs that were not written
    states = {proxy_state(run.summary) for run in result.runs}
    started = [n["started_at"] for n in notebooks if n["started_at"]]
    report = {
        **_base(ctx, blocked_exit=blocked_exit),
        "provider": target.provider,
        "verdict": result.verdict,
        "exit_code": with_problems(smoke_exit_code(result.verdict, blocked_exit, cancelled_by), problems),
        "cancelled_by": cancelled_by,
        "problems": problems,
        "run_id": result.run_id,
        "started_at": min(started) if started else iso_now(),
        "target_kind": target.kind,
        # the state the notebooks saw the proxy in: a stale proxy behind a "live" endpoint is not live
        "proxy_state": next((s for s in ("stale", "unreachable", "live") if s in states), None),
        "endpoint": target.endpoint,
        "hermes_version": target.release,
        "hermes_version_source": target.release_source,
        "target_evidence": target.evidence,
        "out": where(result.out_dir),
        "duration_s": round(result.duration_s, 3),
        "notebooks": notebooks,
    }
    return (redactor or Redactor(result.secrets)).data(report)


def not_started_report(error: str, *, target_kind: str, blocked_exit: int = EXIT_BLOCKED,
                       hermes_version: str | None = None, verdict: str = "blocked", cancelled_by: str | None = None,
                       environ: Mapping[str, str] | None = None, redactor: Redactor | None = None,
                       notebooks: Sequence[str] = ()) -> dict[str, Any]:
    """The CI report of a smoke whose target never started (the rig refused or did not come up, or a signal came
    first): one case per requested notebook (``notebooks``), else one named after the target, each carrying the
    reason (as the operator action when blocked), so CI shows why. It still has a run id, a start time and the
    host."""
    ctx = ci_context(environ)
    now = iso_now()
    report = {
        **_base(ctx, blocked_exit=blocked_exit), "provider": None, "verdict": verdict,
        "exit_code": smoke_exit_code(verdict, blocked_exit, cancelled_by), "cancelled_by": cancelled_by,
        "run_id": new_run_id(), "started_at": now, "target_kind": target_kind, "endpoint": None,
        "hermes_version": hermes_version, "target_evidence": None, "out": None, "duration_s": 0.0,
        "notebooks": [{"name": name, "verdict": verdict, "status": "not started",
                       "reason": error if verdict == "cancelled" else "not started",
                       "errors": [error], "hint": None, "drift": [],
                       "operator_action": error if verdict == "blocked" else None,
                       "duration_s": 0.0, "started_at": now, "receipt": None, "receipt_url": None}
                      for name in (notebooks or [target_kind])],
    }
    return (redactor or Redactor()).data(report)


def check_output_paths(**paths: str | Path | None) -> None:
    """Every output file asked for is proven writable by creating a file where it goes (:func:`prove_writable`),
    else a :class:`UsageError` before anything runs."""
    for what, path in paths.items():
        if path is not None:
            prove_writable(path, f"{what.replace('_', ' ')} output")


def step_summary_path(given: str | Path | None, environ: Mapping[str, str], warnings: list[str]) -> str | None:
    """The step summary to append to (``given``, else ``$GITHUB_STEP_SUMMARY``); an unwritable one is a warning,
    added once to ``warnings``, and skipped."""
    path = str(given) if given is not None else (environ.get("GITHUB_STEP_SUMMARY") or None)
    try:
        return str(prove_writable(path, "GITHUB_STEP_SUMMARY", append=True)) if path else None
    except UsageError as exc:
        warnings.append(f"{exc}; the summary is not appended there")
        return None


def with_problems(code: int, problems: Sequence[str]) -> int:
    """The exit code of a job some of whose outputs were not written: its own when that already fails, else 2."""
    return (code or EXIT_USAGE) if problems else code


def write_ci_outputs(report: dict[str, Any], *, redactor: Redactor, junit_xml: str | Path | None = None,
                     summary_md: str | Path | None = None, step_summary: str | Path | None = None,
                     warnings: list[str] | None = None, problems: list[str] | None = None,
                     junit_text: str | None = None, summary_text: str | None = None) -> dict[str, str]:
    """Write the JUnit XML, the Markdown summary, and append the summary to ``$GITHUB_STEP_SUMMARY``.

    Returns ``{"junit_xml": path, "summary_md": path, "step_summary": path}`` for what was written; each is
    written whole or not at all. ``junit_text``/``summary_text``: documents made elsewhere (the matrix's) instead
    of the report's. An output that cannot be written after all (the disk filled up during the run) is one line in
    ``problems`` (the job then fails naming it; without ``problems`` it is raised); the step summary is GitHub's,
    appended to: a failure there is one line in ``warnings``. A document that would carry a secret is refused.
    """
    from hermes_nb.receipts.ci import write_junit, write_summary

    written: dict[str, str] = {}
    jobs: list[tuple[str, Any, Callable[[], Path], list[str] | None]] = [
        ("junit_xml", junit_xml, lambda: write_junit(report, str(junit_xml), redactor=redactor, text=junit_text),
         problems),
        ("summary_md", summary_md,
         lambda: write_summary(report, str(summary_md), redactor=redactor, text=summary_text), problems),
        ("step_summary", step_summary,
         lambda: write_summary(report, str(step_summary), redactor=redactor, append=True, text=summary_text),
         warnings),
    ]
    for key, path, write, failures in jobs:
        if not path:
            continue
        try:
            written[key] = str(write())
        except (ArtifactError, OSError) as exc:
            if failures is None:
                raise
            failures.append(str(exc) if isinstance(exc, ArtifactError)
                            else f"{key.replace('_', ' ')} {path}: not written ({exc.strerror or exc})")
    return written
