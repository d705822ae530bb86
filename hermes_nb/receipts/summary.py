"""The Markdown summary of a smoke run: appended to ``$GITHUB_STEP_SUMMARY`` (GitHub's job summary, capped at
1 MiB a step; appended, never truncated) and written to ``--summary-md PATH``. Redacted and scanned before it is
written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.io import write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.write import check_clean

_ICON = {"passed": "✅", "blocked": "⏸️", "failed": "❌", "cancelled": "⏹️"}
#: GitHub's cap for one step's summary; we keep well under it
MAX_SUMMARY_CHARS = 512 * 1024


def md_cell(value: Any) -> str:
    """Text safe inside one Markdown table cell."""
    text = "—" if value is None or value == "" else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _link(location: str | None, url: str | None = None) -> str:
    if not location:
        return "—"
    if url:
        return f"[`{md_cell(location)}`]({url})"
    if "://" in location and location.split("://", 1)[0] in ("http", "https"):
        return f"[receipt]({location})"
    return f"`{md_cell(location)}`"


def _blocked_policy(code: int) -> str:
    return {3: "exit 3 (blocked fails the step unless the pipeline allows exit code 3)",
            0: "exit 0 (blocked does not fail the pipeline)",
            1: "exit 1 (blocked fails the pipeline like a failure)"}.get(code, f"exit {code}")


def summary_markdown(report: Mapping[str, Any], *, title: str = "hermes-nb smoke") -> str:
    """The Markdown of one smoke run (``report``: :func:`~hermes_nb.nbrun.ci_report.ci_report`)."""
    verdict = str(report.get("verdict"))
    notebooks = list(report.get("notebooks") or [])
    blocked_exit = int(report.get("blocked_exit", 3))
    lines = [
        f"## {_ICON.get(verdict, '')} {title}: {verdict} (exit {report.get('exit_code')})".replace("  ", " "),
        "",
        f"- target: **{md_cell(report.get('target_kind'))}**"
        + (f" (proxy {md_cell(report['proxy_state'])})" if report.get("proxy_state") not in (None, "live") else "")
        + (f" at `{md_cell(report['endpoint'])}`" if report.get("endpoint") else " (embedded emulator)")
        + (f", hermes-agent {md_cell(report['hermes_version'])}" if report.get("hermes_version") else "")
        + (f", provider **{md_cell(report['provider'])}**" if report.get("provider") else ""),
        f"- run `{md_cell(report.get('run_id'))}` in {float(report.get('duration_s') or 0):.1f} s; "
        f"receipts: {_link(report.get('out'))}",
        f"- blocked policy (`--blocked-exit {blocked_exit}`): a blocked smoke gives {_blocked_policy(blocked_exit)}",
    ]
    if report.get("ci_run_url"):
        lines.append(f"- CI run: {report['ci_run_url']} (the receipts are among its artifacts)")
    if report.get("cancelled_by"):
        lines.append(f"- cancelled by {md_cell(report['cancelled_by'])}: the notebooks still running were stopped; "
                     "the finished receipts are kept")
    if report.get("target_evidence"):
        lines.append(f"- target relabelled: {md_cell(report['target_evidence'])}")
    lines += ["", "| notebook | verdict | reason | time (s) | receipt |", "|---|---|---|---|---|"]
    for n in notebooks:
        v = str(n.get("verdict"))
        lines.append(f"| {md_cell(n.get('name'))} | {_ICON.get(v, '')} {md_cell(v)} | {md_cell(n.get('reason'))} "
                     f"| {float(n.get('duration_s') or 0):.2f} | {_link(n.get('receipt'), n.get('receipt_url'))} |")
    actions: dict[str, list[str]] = {}  # one line per distinct action (an unreachable proxy: one)
    for n in notebooks:
        if n.get("verdict") == "blocked":
            actions.setdefault(str(n.get("operator_action")), []).append(str(n.get("name")))
    if actions:
        lines += ["", "### Operator action needed", ""]
        lines += [f"- **{md_cell(', '.join(names))}**: {md_cell(action)}" for action, names in actions.items()]
    cancelled = [n for n in notebooks if n.get("verdict") == "cancelled"]
    if cancelled:
        lines += ["", "### Cancelled", ""]
        lines += [f"- **{md_cell(n.get('name'))}**: {md_cell(n.get('reason'))}" for n in cancelled]
    failures = [n for n in notebooks if n.get("verdict") not in ("passed", "blocked", "cancelled")]
    if failures:
        lines += ["", "### Failures", ""]
        for n in failures:
            first = (n.get("errors") or [n.get("reason")])[0]
            lines.append(f"- **{md_cell(n.get('name'))}** ({md_cell(n.get('status'))}): {md_cell(first)}")
    drift = [(n.get("name"), d) for n in notebooks for d in n.get("drift") or []]
    lines += ["", "### Wire drift", ""]
    skipped = [d for n in notebooks for d in n.get("not_judged") or []]
    if drift:
        lines += [f"- `{md_cell(name)}`: {md_cell(d)}" for name, d in drift]
    elif skipped:
        lines.append(f"- none; {len(skipped)} not judged (the upstream's or the endpoint's trouble, not the "
                     f"proxy's): {md_cell(skipped[0])}" + (" …" if len(skipped) > 1 else ""))
    else:
        lines.append("- none recorded" if any(n.get("name") == "wire_format_spike" for n in notebooks)
                     else "- not probed (wire_format_spike did not run)")
    text = "\n".join(lines) + "\n"
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[:MAX_SUMMARY_CHARS] + "\n\n… (truncated; the receipts hold everything)\n"
    return text


def write_summary(report: Mapping[str, Any], path: str | Path, *, redactor: Redactor, append: bool = False,
                  text: str | None = None) -> Path:
    """Write (or append) the summary Markdown of ``report`` or the given ``text`` (redacted, then scanned: a
    secret refuses the write)."""
    text = summary_markdown(redactor.data(dict(report))) if text is None else redactor.text(text)
    check_clean(str(path), text, redactor)
    if not append:
        return write_atomic(path, text, what="summary")
    target = Path(path)  # GitHub's step summary: appended to, as GitHub asks
    with target.open("a", encoding="utf-8") as fh:
        fh.write(("\n" if target.stat().st_size else "") + text)
    return target
