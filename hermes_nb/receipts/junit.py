"""JUnit XML of a smoke run: what Jenkins, GitLab and the GitHub test-report actions render.

Shape (valid against Jenkins xunit-plugin's ``junit-10.xsd``, the schema GitLab's and the GitHub
actions' parsers accept; ``tests/data/junit-10.xsd``):

* one ``<testsuite name="hermes-nb smoke <target kind>">`` per smoke run, wrapped in ``<testsuites>``,
  with correct ``tests``/``failures``/``errors``/``skipped`` counters, always a ``hostname``, a
  ``timestamp`` (the run's start, UTC) and an ``id`` (the run id), and ``<properties>``: ``run_id``,
  ``target_kind``, ``provider``, ``endpoint``, ``hermes_version``, ``verdict``, ``exit_code``, ``blocked_exit``,
  ``ci_run_url`` and ``receipt:<notebook>`` for each receipt (the schema allows properties on the suite only);
  a matrix writes one such suite per hermes-agent version (:func:`junit_suites_text`);
* one ``<testcase name="<notebook>" classname="<target kind>" time="…">`` per notebook; its
  ``<system-out>`` names the receipt's path relative to the CI artifact root (and its URL, when the CI
  system gives artifacts one);
* **failed** → ``<failure type="<kind>" message="<reason>: <first error>">`` with every error and the hint
  as text; the kind is the notebook's own reason when its verdict cell decided (``drift``), else what
  happened in words (``cell timeout``, ``kernel died``), never an internal status name;
* **blocked** → ``<skipped type="blocked" message="blocked (<reason>): <operator action>">``, the message
  said once, the text holding only further errors: every reader keeps the pipeline green on its own and
  shows the case as skipped with the action, while the exit code (``--blocked-exit``, default 3) decides
  whether the job fails (a matrix version that cannot run the rig state is skipped the same way, type
  ``unsupported``). ``<error>`` would turn all of them red with no way to opt out, so we do not use it
  for blocked;
* **cancelled** (stopped by SIGINT/SIGTERM while it ran) → ``<error type="cancelled">``: the case did not
  complete, which is what ``<error>`` means.

Built with the standard library's ElementTree; ANSI escapes and characters XML 1.0 forbids are
stripped first (ElementTree writes ``\\x1b`` raw, which no parser reads back).
"""

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

__all__ = ["junit_element", "junit_suites_element", "junit_text", "junit_suites_text", "write_junit", "xml_safe"]

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


def _suite(parent: ET.Element, report: Mapping[str, Any], name: str | None = None) -> tuple[int, int, int, int]:
    """One ``<testsuite>`` for one smoke report; returns its (tests, failures, errors, skipped)."""
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
    for n in notebooks:
        _case(suite, n, kind)
    return len(notebooks), failed, errored, blocked


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


def junit_element(report: Mapping[str, Any]) -> ET.Element:
    """``<testsuites>`` holding the one ``<testsuite>`` of a smoke run
    (``report``: :func:`~hermes_nb.nbrun.ci_report.ci_report`)."""
    return junit_suites_element([report], name="hermes-nb smoke")


def junit_suites_element(reports: Sequence[tuple[str | None, Mapping[str, Any]] | Mapping[str, Any]], *,
                         name: str) -> ET.Element:
    """``<testsuites name=name>`` with one ``<testsuite>`` per report (a report, or ``(suite name, report)``)."""
    root = ET.Element("testsuites", {"name": name})
    totals = [0, 0, 0]
    time = 0.0
    for item in reports:
        suite_name, report = item if isinstance(item, tuple) else (None, item)
        tests, failed, errored, _ = _suite(root, report, suite_name)
        totals = [totals[0] + tests, totals[1] + failed, totals[2] + errored]
        time += float(_seconds(report.get("duration_s")))
    root.attrib.update({"tests": str(totals[0]), "failures": str(totals[1]), "errors": str(totals[2]),
                        "time": f"{time:.3f}"})
    ET.indent(root)
    return root


def junit_text(report: Mapping[str, Any]) -> str:
    return ET.tostring(junit_element(report), encoding="unicode", xml_declaration=True) + "\n"


def junit_suites_text(reports: Sequence[tuple[str | None, Mapping[str, Any]] | Mapping[str, Any]], *, name: str) -> str:
    return ET.tostring(junit_suites_element(reports, name=name), encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Mapping[str, Any], path: str | Path, *, redactor: Redactor, text: str | None = None) -> Path:
    """Write the JUnit XML of ``report`` (or the given ``text``; redacted, then scanned: a secret refuses the write)."""
    text = junit_text(redactor.data(dict(report))) if text is None else redactor.text(text)
    check_clean(str(path), text, redactor)
    return write_atomic(path, text, what="JUnit XML")
