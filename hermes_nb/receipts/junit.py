"""JUnit XML of a smoke run: what Jenkins, GitLab and the GitHub test-report actions render.

Shape (valid against Jenkins xunit-plugin's ``junit-10.xsd``, the schema GitLab's and the GitHub
actions' parsers accept; ``tests/data/junit-10.xsd``):

* one ``<testsuite name="hermes-nb smoke <target kind>">`` per smoke run, wrapped in ``<testsuites>``,
  with correct ``tests``/``failures``/``errors``/``skipped`` counters and ``<properties>``: ``run_id``,
  ``target_kind``, ``provider``, ``endpoint``, ``hermes_version``, ``verdict``, ``exit_code``, ``blocked_exit`` and
  ``receipt:<notebook>`` for each receipt (the schema allows properties on the suite only);
* one ``<testcase name="<notebook>" classname="<target kind>" time="…">`` per notebook; its
  ``<system-out>`` names the receipt path (or URL);
* **failed** → ``<failure type="<status>" message="<reason>: <first error>">`` with every error and the
  hint as text;
* **blocked** → ``<skipped type="blocked" message="blocked: <reason> — <operator action>">``: every
  reader keeps the pipeline green on its own and shows the case as skipped with the action, while the
  exit code (``--blocked-exit``, default 3) decides whether the job fails. ``<error>`` would turn all
  of them red with no way to opt out, so we do not use it.

Built with the standard library's ElementTree; ANSI escapes and characters XML 1.0 forbids are
stripped first (ElementTree writes ``\\x1b`` raw, which no parser reads back).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.write import check_clean

__all__ = ["junit_element", "junit_text", "write_junit", "xml_safe"]

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(value: Any) -> str:
    """``value`` as text XML 1.0 can carry: ANSI colour codes and forbidden characters removed."""
    return _ILLEGAL.sub("", _ANSI.sub("", "" if value is None else str(value)))


def _seconds(value: Any) -> str:
    try:
        return f"{max(float(value), 0.0):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def junit_element(report: Mapping[str, Any]) -> ET.Element:
    """``<testsuites>`` holding the one ``<testsuite>`` of a smoke run (``report``: :func:`~hermes_nb.nbrun.ci_report.ci_report`)."""
    kind = str(report.get("target_kind") or "emulator")
    notebooks = list(report.get("notebooks") or [])
    failed = sum(1 for n in notebooks if n.get("verdict") not in ("passed", "blocked"))
    blocked = sum(1 for n in notebooks if n.get("verdict") == "blocked")
    total_time = _seconds(report.get("duration_s"))
    root = ET.Element("testsuites", {"name": "hermes-nb smoke", "tests": str(len(notebooks)),
                                     "failures": str(failed), "errors": "0", "time": total_time})
    suite = ET.SubElement(root, "testsuite", {
        "name": f"hermes-nb smoke {kind}", "tests": str(len(notebooks)), "failures": str(failed),
        "errors": "0", "skipped": str(blocked), "time": total_time,
        "timestamp": xml_safe(min((n.get("started_at") or "" for n in notebooks), default="") or ""),
        "id": xml_safe(report.get("run_id")),
    })
    props = ET.SubElement(suite, "properties")
    for name in ("run_id", "target_kind", "provider", "endpoint", "hermes_version", "verdict", "exit_code",
                 "blocked_exit"):
        if report.get(name) is not None:
            ET.SubElement(props, "property", {"name": name, "value": xml_safe(report[name])})
    for n in notebooks:
        if n.get("receipt"):
            ET.SubElement(props, "property", {"name": f"receipt:{n.get('name')}", "value": xml_safe(n["receipt"])})
    for n in notebooks:
        case = ET.SubElement(suite, "testcase", {"name": xml_safe(n.get("name")), "classname": xml_safe(kind),
                                                 "time": _seconds(n.get("duration_s"))})
        verdict, reason = n.get("verdict"), str(n.get("reason") or n.get("verdict"))
        errors = [str(e) for e in n.get("errors") or []]
        if verdict == "blocked":
            action = str(n.get("operator_action") or reason)
            el = ET.SubElement(case, "skipped", {"type": "blocked",
                                                 "message": xml_safe(f"blocked: {reason} — {action}")})
            el.text = xml_safe("\n".join([f"operator action: {action}", *errors]))
        elif verdict != "passed":
            first = errors[0] if errors else reason
            el = ET.SubElement(case, "failure", {"type": xml_safe(n.get("status") or "failed"),
                                                 "message": xml_safe(f"{reason}: {first}" if first != reason else reason)})
            lines = [*errors, *([f"hint: {n['hint']}"] if n.get("hint") else []),
                     *(f"drift: {d}" for d in n.get("drift") or [])]
            el.text = xml_safe("\n".join(lines) or reason)
        out = ET.SubElement(case, "system-out")
        out.text = xml_safe(f"verdict: {verdict} ({reason})\nreceipt: {n.get('receipt') or '(not written)'}")
    ET.indent(root)
    return root


def junit_text(report: Mapping[str, Any]) -> str:
    return ET.tostring(junit_element(report), encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Mapping[str, Any], path: str | Path, *, redactor: Redactor) -> Path:
    """Write the JUnit XML of ``report`` (redacted, then scanned: a secret refuses the write)."""
    text = junit_text(redactor.data(dict(report)))
    check_clean(str(path), text, redactor)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
