"""The smoke as CI reads it: one plain, redacted document behind the JUnit XML and the Markdown summary
(:mod:`hermes_nb.receipts.ci` writes them). Receipts are named relative to the artifact root (``$GITHUB_WORKSPACE``,
``$CI_PROJECT_DIR``, else the working directory), beside the CI run's page and, on GitLab, each receipt's own URL."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.facts import EXIT_BLOCKED, EXIT_USAGE, exit_code_for, exit_code_for_signal
from hermes_nb.core.io import iso_now, new_run_id, prove_writable
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.ci import write_junit, write_summary
from hermes_nb.receipts.verdict import operator_action, proxy_state

__all__ = ["STATUS_WORDS", "ci_report", "smoke_exit_code", "write_ci_outputs", "not_started_report",
           "check_output_paths", "step_summary_path", "with_problems"]

#: an execution status as CI readers see it ("a cell raised", not ``cell_error``)
STATUS_WORDS = {
    "completed": "completed", "cell_error": "a cell raised", "timeout": "cell timeout",
    "dead_kernel": "kernel died", "kernel_error": "kernel did not start", "runner_error": "runner error",
    "interrupted": "cancelled", "pending": "not started", "not_started": "not started",
}


def smoke_exit_code(verdict: str, blocked_exit: int = EXIT_BLOCKED, cancelled_by: str | None = None) -> int:
    """A verdict's exit code, blocked mapped to ``blocked_exit``, a run stopped by a signal 128 + its number."""
    if cancelled_by:
        return exit_code_for_signal(signal.Signals[cancelled_by].value)
    return blocked_exit if verdict == "blocked" else exit_code_for(verdict)


def with_problems(code: int, problems: Sequence[str]) -> int:
    """The exit code of a job some of whose outputs were not written: its own when that already fails, else 2."""
    return (code or EXIT_USAGE) if problems else code


def _ci(environ: Mapping[str, str] | None) -> tuple[Path, str | None, str | None]:
    """(the artifact root, the CI run's page, GitLab's URL prefix of a job artifact) from what CI sets."""
    env = os.environ if environ is None else environ
    if env.get("GITLAB_CI") or env.get("CI_JOB_URL"):
        job = env.get("CI_JOB_URL") or None
        return Path(env.get("CI_PROJECT_DIR") or Path.cwd()), job, f"{job}/artifacts/file" if job else None
    server, repository, run_id = (env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    run_url = f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}" if server and repository and run_id else None
    return Path(env.get("GITHUB_WORKSPACE") or Path.cwd()), run_url, None


def _relative(root: Path, location: Any) -> str:
    """A URL as is; a local path relative to the artifact root when it is under it."""
    path = Path(str(location))
    if "://" in str(location):
        return str(location)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _base(run_url: str | None, blocked_exit: int) -> dict[str, Any]:
    return {"schema": "hermes-nb.smoke-ci.v1", "blocked_exit": blocked_exit, "hostname": socket.gethostname(),
            "ci_run_url": run_url}


def ci_report(result: Any, *, blocked_exit: int = EXIT_BLOCKED, redactor: Redactor | None = None,
              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Plain, redacted data for JUnit and the step summary; per notebook what an operator acts on."""
    root, run_url, file_url = _ci(environ)
    notebooks = []
    for run in result.runs:
        summary = run.summary or {}
        details = summary.get("details")
        details = details if isinstance(details, dict) else {}
        decided = summary.get("verdict") == run.verdict  # its verdict cell decided: it raised NotebookFailed to stop
        errors = [str(e) for e in run.errors if not (decided and str(e).startswith("NotebookFailed: "))]
        receipt = _relative(root, run.receipt_path) if run.receipt_path else None
        status = STATUS_WORDS.get(run.status, run.status.replace("_", " "))
        notebooks.append({
            "name": run.name, "verdict": run.verdict, "status": status,
            # what kind of failure, in a word or two: the notebook's own reason when its verdict cell decided
            "kind": str(summary.get("reason")) if decided else status,
            "reason": run.reason, "errors": errors, "hint": details.get("hint"),
            "drift": [str(d) for d in details.get("drift") or []],
            "not_judged": [str(d) for d in details.get("not_judged") or []],
            "operator_action": operator_action(summary, run.reason, errors) if run.verdict == "blocked" else None,
            "duration_s": round(run.duration_s, 3), "started_at": run.started_at or None, "receipt": receipt,
            "receipt_url": f"{file_url}/{receipt}" if file_url and receipt and "://" not in receipt
            and not Path(receipt).is_absolute() else None,
        })
    target, problems = result.target, [str(p) for p in result.problems]
    states = {proxy_state(run.summary) for run in result.runs}
    started = [n["started_at"] for n in notebooks if n["started_at"]]
    report = {
        **_base(run_url, blocked_exit), "provider": target.provider, "verdict": result.verdict,
        "exit_code": with_problems(smoke_exit_code(result.verdict, blocked_exit, result.cancelled_by), problems),
        "cancelled_by": result.cancelled_by, "problems": problems, "run_id": result.run_id,
        "started_at": min(started) if started else iso_now(), "target_kind": target.kind,
        # the state the notebooks saw the proxy in: a stale proxy behind a "live" endpoint is not live
        "proxy_state": next((s for s in ("stale", "unreachable", "live") if s in states), None),
        "endpoint": target.endpoint, "hermes_version": target.release,
        "hermes_version_source": target.release_source, "target_evidence": target.evidence,
        "out": _relative(root, result.out_dir), "duration_s": round(result.duration_s, 3), "notebooks": notebooks,
    }
    return (redactor or Redactor(result.secrets)).data(report)


def not_started_report(error: str, *, target_kind: str, blocked_exit: int = EXIT_BLOCKED,
                       hermes_version: str | None = None, verdict: str = "blocked", cancelled_by: str | None = None,
                       environ: Mapping[str, str] | None = None, redactor: Redactor | None = None,
                       notebooks: Sequence[str] = ()) -> dict[str, Any]:
    """The report of a smoke whose target never started (the rig refused, or a signal came first): one case per
    requested notebook, else one named after the target, each carrying the reason, so CI shows why."""
    now = iso_now()
    report = {
        **_base(_ci(environ)[1], blocked_exit), "provider": None, "verdict": verdict,
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
    """Every output file asked for is proven writable before anything runs, else a :class:`UsageError`."""
    for what, path in paths.items():
        if path is not None:
            prove_writable(path, f"{what.replace('_', ' ')} output")


def step_summary_path(given: str | Path | None, environ: Mapping[str, str], warnings: list[str]) -> str | None:
    """The step summary to append to (``given``, else ``$GITHUB_STEP_SUMMARY``); an unwritable one is a warning."""
    path = str(given) if given is not None else (environ.get("GITHUB_STEP_SUMMARY") or None)
    try:
        return str(prove_writable(path, "GITHUB_STEP_SUMMARY", append=True)) if path else None
    except UsageError as exc:
        warnings.append(f"{exc}; the summary is not appended there")
        return None


def write_ci_outputs(report: dict[str, Any], *, redactor: Redactor, junit_xml: str | Path | None = None,
                     summary_md: str | Path | None = None, step_summary: str | Path | None = None,
                     warnings: list[str] | None = None, problems: list[str] | None = None,
                     junit_text: str | None = None, summary_text: str | None = None) -> dict[str, str]:
    """Write the JUnit XML and the Markdown summary, append the summary to ``$GITHUB_STEP_SUMMARY``; returns what
    was written, by key. ``junit_text``/``summary_text``: documents made elsewhere (the matrix's). An output not
    written after all (a full disk) is one line in ``problems`` (raised without it); the step summary's, in
    ``warnings``. A document that would carry a secret is refused."""
    written: dict[str, str] = {}
    for key, path, failures in (("junit_xml", junit_xml, problems), ("summary_md", summary_md, problems),
                                ("step_summary", step_summary, warnings)):
        if not path:
            continue
        try:
            written[key] = str(write_junit(report, str(path), redactor=redactor, text=junit_text) if key == "junit_xml"
                               else write_summary(report, str(path), redactor=redactor, text=summary_text,
                                                  append=key == "step_summary"))
        except (ArtifactError, OSError) as exc:
            if failures is None:
                raise
            failures.append(str(exc) if isinstance(exc, ArtifactError)
                            else f"{key.replace('_', ' ')} {path}: not written ({exc.strerror or exc})")
    return written
