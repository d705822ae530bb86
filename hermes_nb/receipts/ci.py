"""What CI reads of a smoke run: its JUnit XML (valid against ``junit-10.xsd``, in docs/ci/README.md's shape:
blocked is ``<skipped>``, so ``--blocked-exit`` decides; cancelled ``<error>``) and its Markdown summary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from socket import gethostname
from typing import Any

from hermes_nb.core.io import iso_now, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.write import check_clean

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(value: Any) -> str:
    """``value`` as text XML 1.0 can carry (no ANSI colour codes, no forbidden characters)."""
    return _ILLEGAL.sub("", _ANSI.sub("", "" if value is None else str(value)))


def _seconds(value: Any) -> str:
    try:
        return f"{max(float(value), 0.0):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def _suite(parent: ET.Element, report: Mapping[str, Any], name: str | None) -> None:
    kind = str(report.get("target_kind") or "emulator")
    notebooks = list(report.get("notebooks") or [])
    errored = sum(1 for n in notebooks if n.get("verdict") == "cancelled")
    blocked = sum(1 for n in notebooks if n.get("verdict") in ("blocked", "unsupported"))
    failed = len(notebooks) - errored - blocked - sum(1 for n in notebooks if n.get("verdict") == "passed")
    started = report.get("started_at") or min((n.get("started_at") or "" for n in notebooks), default="")
    suite = ET.SubElement(parent, "testsuite", {
        "name": name or f"hermes-nb smoke {kind}", "tests": str(len(notebooks)), "failures": str(failed),
        "errors": str(errored), "skipped": str(blocked), "time": _seconds(report.get("duration_s")),
        "timestamp": xml_safe(started or iso_now()), "hostname": xml_safe(report.get("hostname") or gethostname()),
        "id": xml_safe(report.get("run_id") or "not-started"),
    })
    props = ET.SubElement(suite, "properties")
    for prop in ("run_id", "target_kind", "provider", "proxy_state", "endpoint", "hermes_version", "verdict",
                 "exit_code", "blocked_exit", "cancelled_by", "ci_run_url"):
        if report.get(prop) is not None:
            ET.SubElement(props, "property", {"name": prop, "value": xml_safe(report[prop])})
    for n in notebooks:
        if n.get("receipt"):
            ET.SubElement(props, "property", {"name": f"receipt:{n.get('name')}",
                                              "value": xml_safe(n.get("receipt_url") or n["receipt"])})
        _case(suite, n, kind)


def _case(suite: ET.Element, n: Mapping[str, Any], kind: str) -> None:
    case = ET.SubElement(suite, "testcase", {"name": xml_safe(n.get("name")), "classname": xml_safe(kind),
                                             "time": _seconds(n.get("duration_s"))})
    verdict, reason = n.get("verdict"), str(n.get("reason") or n.get("verdict"))
    errors = [str(e) for e in n.get("errors") or []]
    if verdict in ("blocked", "unsupported"):  # unsupported: a matrix version that cannot run the state
        action = str(n.get("operator_action") or (errors[0] if errors else reason))
        el = ET.SubElement(case, "skipped", {"type": str(verdict),
                                             "message": xml_safe(f"{verdict} ({reason}): {action}")})
        rest = [e for e in errors if e != action and e not in action]
        if rest:
            el.text = xml_safe("\n".join(rest))
    elif verdict == "cancelled":
        el = ET.SubElement(case, "error", {"type": "cancelled", "message": xml_safe(reason)})
        el.text = xml_safe("\n".join(errors) or reason)
    elif verdict != "passed":
        first = errors[0] if errors else reason
        el = ET.SubElement(case, "failure", {"type": xml_safe(n.get("kind") or n.get("status") or "failed"),
                                             "message": xml_safe(f"{reason}: {first}" if first != reason else reason)})
        lines = [*errors, *([f"hint: {n['hint']}"] if n.get("hint") else []),
                 *(f"drift: {d}" for d in n.get("drift") or [])]
        el.text = xml_safe("\n".join(lines) or reason)
    out = ET.SubElement(case, "system-out")
    where = [f"receipt: {n.get('receipt') or '(not written)'}"] + ([f"receipt url: {n['receipt_url']}"]
                                                                  if n.get("receipt_url") else [])
    out.text = xml_safe("\n".join([f"verdict: {verdict} ({reason})", *where]))


def junit_suites_text(reports: Sequence[tuple[str | None, Mapping[str, Any]] | Mapping[str, Any]], *, name: str) -> str:
    """``<testsuites name=name>`` with one ``<testsuite>`` per report (a report, or ``(suite name, report)``)."""
    root = ET.Element("testsuites", {"name": name})
    for item in reports:
        suite_name, report = item if isinstance(item, tuple) else (None, item)
        _suite(root, report, suite_name)
    root.attrib.update({key: str(sum(int(s.get(key, 0)) for s in root)) for key in ("tests", "failures", "errors")})
    root.set("time", f"{sum(float(s.get('time', 0)) for s in root):.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def junit_text(report: Mapping[str, Any]) -> str:
    """One smoke run's (``report``: :func:`~hermes_nb.nbrun.jobs.ci_report`)."""
    return junit_suites_text([report], name="hermes-nb smoke")


_ICON = {"passed": "✅", "blocked": "⏸️", "failed": "❌", "cancelled": "⏹️"}
#: well under GitHub's cap for one step's summary
MAX_SUMMARY_CHARS = 512 * 1024


def md_cell(value: Any) -> str:
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


def write_ci_file(path: str | Path, text: str, redactor: Redactor, what: str, *, append: bool = False) -> Path:
    """Write ``text`` (scanned: a secret refuses the write), or append it (GitHub's step summary)."""
    check_clean(str(path), text, redactor)
    if not append:
        return write_atomic(path, text, what=what)
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(("\n" if Path(path).stat().st_size else "") + text)
    return Path(path)
