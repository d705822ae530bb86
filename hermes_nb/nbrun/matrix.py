"""The proxy-version matrix: the smoke against the real proxy of several hermes-agent releases.

For each provider (``--providers``, default ``nous``) and version (oldest first): if the release cannot
run the rig state (nous ``live`` on 0.16.0 and 0.17.0, see :mod:`hermes_nb.proxy.venvs`) it is recorded
``unsupported`` and nothing is installed; else its venv is found or built
(:func:`~hermes_nb.proxy.venvs.ensure_hermes`), the real proxy is started in that state with that
provider (:func:`~hermes_nb.proxy.rig.real_proxy`) and the smoke runs against it into its own receipts
directory ``<out>/<version>/`` (``<out>/<version>-<provider>/`` for a provider other than nous, as the
contracts are named). The wire-format spike compares every version with the same reference contract
(the notebook's default, ``hermes-agent-0.19.0``, of the provider the proxy fronts), so its drift lines are
comparable across versions.

The matrix summary — ``<out>/matrix.json`` and ``<out>/matrix.md`` — lists each version's status,
verdict, per-notebook verdicts and drift lines, and between consecutive versions that ran: which
notebook verdicts changed and which drift lines appeared or went away ("what drifted between
versions"). The runner is injectable (tests use a fake one; installing releases is slow).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.facts import EXIT_BLOCKED, EXIT_FAILED, EXIT_OK, NOTEBOOKS, worst_verdict
from hermes_nb.core.redaction import Redactor

__all__ = ["MATRIX_SCHEMA", "REFERENCE_CONTRACT", "VersionRun", "MatrixResult", "run_matrix", "rig_runner",
           "matrix_markdown", "version_key"]

MATRIX_SCHEMA = "hermes-nb.proxy-matrix.v1"
REFERENCE_CONTRACT = "hermes-agent-0.19.0"

#: ``runner(version, state, out_dir, provider) -> ci report`` (:func:`hermes_nb.nbrun.ci_report.ci_report`)
Runner = Callable[[str, str, Path, str], dict[str, Any]]
#: ``support(version, state, provider) -> reason it cannot run, or None``
Support = Callable[[str, str, str], "str | None"]


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.replace("-", ".").split("."))


@dataclass
class VersionRun:
    version: str
    state: str
    #: ran | unsupported | unavailable (install or rig start failed: the reason says which)
    status: str
    verdict: str | None = None
    reason: str | None = None
    out_dir: str | None = None
    report: dict[str, Any] | None = None
    #: ``hermes proxy start --provider``
    provider: str = "nous"

    def notebooks(self) -> dict[str, str]:
        return {n["name"]: n["verdict"] for n in (self.report or {}).get("notebooks", [])}

    def drift(self) -> list[str]:
        return [d for n in (self.report or {}).get("notebooks", []) for d in n.get("drift") or []]

    def to_dict(self) -> dict[str, Any]:
        report = self.report or {}
        return {"version": self.version, "provider": self.provider, "state": self.state, "status": self.status,
                "verdict": self.verdict,
                "reason": self.reason, "run_id": report.get("run_id"), "out_dir": self.out_dir,
                "hermes_version": report.get("hermes_version"), "notebooks": self.notebooks(),
                "drift": self.drift(), "duration_s": report.get("duration_s")}


@dataclass
class MatrixResult:
    state: str
    out_dir: Path
    runs: list[VersionRun] = field(default_factory=list)
    duration_s: float = 0.0
    providers: tuple[str, ...] = ("nous",)

    @property
    def verdict(self) -> str:
        ran = [r.verdict or "failed" for r in self.runs if r.status == "ran"]
        if any(r.status == "unavailable" for r in self.runs):
            ran.append("blocked")
        return worst_verdict(ran) if ran else "blocked"

    @property
    def exit_code(self) -> int:
        return {"passed": EXIT_OK, "blocked": EXIT_BLOCKED}.get(self.verdict, EXIT_FAILED)

    def changes(self) -> list[dict[str, Any]]:
        """Between consecutive versions that ran (per provider): verdict changes per notebook, drift lines
        added/removed."""
        out = []
        for provider in self.providers:
            out += self._changes([r for r in self.runs if r.status == "ran" and r.provider == provider])
        return out

    @staticmethod
    def _changes(ran: list[VersionRun]) -> list[dict[str, Any]]:
        out = []
        for before, after in zip(ran, ran[1:]):
            a, b = before.notebooks(), after.notebooks()
            verdicts = {n: [a.get(n), b.get(n)] for n in dict.fromkeys([*a, *b]) if a.get(n) != b.get(n)}
            da, db = before.drift(), after.drift()
            out.append({"from": before.version, "to": after.version, "provider": after.provider, "verdicts": verdicts,
                        "drift_added": [d for d in db if d not in da], "drift_removed": [d for d in da if d not in db]})
        return out

    def to_dict(self) -> dict[str, Any]:
        from hermes_nb.proxy.venvs import support_table

        versions = sorted({r.version for r in self.runs}, key=version_key)
        return {"schema": MATRIX_SCHEMA, "state": self.state, "verdict": self.verdict, "exit_code": self.exit_code,
                "reference_contract": REFERENCE_CONTRACT, "out_dir": str(self.out_dir),
                "providers": list(self.providers),
                "duration_s": round(self.duration_s, 3), "versions": [r.to_dict() for r in self.runs],
                "changes": self.changes(),
                "support": {p: support_table(versions, p) for p in self.providers}}


def matrix_markdown(doc: dict[str, Any]) -> str:
    """The matrix summary as Markdown (``doc``: :meth:`MatrixResult.to_dict`)."""
    from hermes_nb.receipts.summary import md_cell

    names = list(dict.fromkeys([n for v in doc["versions"] for n in v["notebooks"]] or list(NOTEBOOKS)))
    lines = [f"## hermes-nb proxy matrix ({md_cell(doc['state'])}): {doc['verdict']} (exit {doc['exit_code']})", "",
             f"Each version's wire-format spike compares with `{doc['reference_contract']}`; receipts per version "
             f"under `{md_cell(doc['out_dir'])}/<version>/`.", "",
             "| hermes-agent | provider | status | verdict | " + " | ".join(names) + " | drift lines | run |",
             "|---|---|---|---|" + "---|" * len(names) + "---|---|"]
    for v in doc["versions"]:
        cells = [v["notebooks"].get(n, "—") for n in names]
        lines.append(f"| {v['version']} | {v.get('provider', 'nous')} | {v['status']} | {md_cell(v['verdict'])} | "
                     + " | ".join(md_cell(c) for c in cells)
                     + f" | {len(v['drift'])} | {md_cell(v['run_id'])} |")
    notes = [v for v in doc["versions"] if v["status"] != "ran"]
    if notes:
        lines += ["", "### Not run", ""] + [f"- **{_label(v)}** ({v['status']}): {md_cell(v['reason'])}"
                                            for v in notes]
    drifting = [v for v in doc["versions"] if v["drift"]]
    if drifting:
        lines += ["", f"### Drift from {doc['reference_contract']} per version", ""]
        for v in drifting:
            lines.append(f"- **{_label(v)}**:")
            lines += [f"  - {md_cell(d)}" for d in v["drift"]]
    lines += ["", "### What drifted between versions", ""]
    if not doc["changes"]:
        lines.append("- fewer than two versions ran: nothing to compare")
    for c in doc["changes"]:
        items = [f"{n}: {a} → {b}" for n, (a, b) in c["verdicts"].items()]
        items += [f"new drift: {d}" for d in c["drift_added"]] + [f"drift gone: {d}" for d in c["drift_removed"]]
        extra = f" ({c['provider']})" if c.get("provider", "nous") != "nous" else ""
        lines.append(f"- **{c['from']} → {c['to']}**{extra}: " + ("none" if not items else ""))
        lines += [f"  - {md_cell(i)}" for i in items]
    lines += ["", "### Rig states each version supports", "",
              "| hermes-agent | provider | stale | live | logged-out |", "|---|---|---|---|---|"]
    mark = {True: "yes", False: "no", None: "unknown"}
    for provider, table in doc["support"].items():
        for version, states in table.items():
            lines.append(f"| {version} | {provider} | {mark[states['stale']]} | {mark[states['live']]} "
                         f"| {mark[states['logged-out']]} |")
    return "\n".join(lines) + "\n"


def _label(v: dict[str, Any]) -> str:
    return v["version"] + (f" ({v['provider']})" if v.get("provider", "nous") != "nous" else "")


def run_matrix(versions: Sequence[str], *, state: str, out_dir: Path, runner: Runner,
               support: Support | None = None, progress: Callable[[str], None] | None = None,
               redactor: Redactor | None = None, providers: Sequence[str] = ("nous",)) -> MatrixResult:
    """Run ``runner`` for every provider and version that supports ``state``; write ``matrix.json`` and
    ``matrix.md``."""
    from hermes_nb.core.errors import HermesError
    from hermes_nb.proxy.venvs import unsupported_reason

    check = support or unsupported_reason
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    from hermes_nb.proxy.contracts import contract_file_name

    result = MatrixResult(state=state, out_dir=out_dir, providers=tuple(dict.fromkeys(providers)))
    for provider, version in ((p, v) for p in result.providers for v in sorted(dict.fromkeys(versions),
                                                                                key=version_key)):
        label = version if provider == "nous" else f"{version} ({provider})"
        why = check(version, state, provider)
        if why is not None:
            result.runs.append(VersionRun(version, state, "unsupported", reason=why, provider=provider))
            if progress:
                progress(f"{label}: unsupported: {why}")
            continue
        target = out_dir / contract_file_name(version, provider)
        try:
            report = runner(version, state, target, provider)
        except HermesError as exc:  # no venv, install failed, rig refused or did not start
            result.runs.append(VersionRun(version, state, "unavailable", reason=str(exc), out_dir=str(target),
                                          provider=provider))
            if progress:
                progress(f"{label}: unavailable: {exc}")
            continue
        result.runs.append(VersionRun(version, state, "ran", verdict=report.get("verdict"),
                                      reason=f"exit {report.get('exit_code')}", out_dir=str(target), report=report,
                                      provider=provider))
        if progress:
            progress(f"{label}: {report.get('verdict')}")
    result.duration_s = time.perf_counter() - t0
    from hermes_nb.receipts.write import check_clean, write_text_atomic

    redactor = redactor or Redactor()
    doc = redactor.data(result.to_dict())
    for name, text in (("matrix.json", json.dumps(doc, indent=2, ensure_ascii=False) + "\n"),
                       ("matrix.md", matrix_markdown(doc))):
        check_clean(name, text, redactor)  # redacted, then scanned: a secret refuses the write
        write_text_atomic(out_dir / name, text)
    return result


def rig_runner(*, install: bool = True, only: Sequence[str] | None = None, timeout_s: float = 120.0,
               html: bool = True, model: str | None = None, secrets: Sequence[str] = (),
               progress: Callable[[str], None] | None = None) -> Runner:
    """The real runner: the version's venv, the real proxy in ``state``, the smoke against it."""
    def run(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict[str, Any]:
        from hermes_nb.nbrun.ci_report import ci_report
        from hermes_nb.nbrun.smoke import run_smoke
        from hermes_nb.nbrun.smoke_target import SmokeTarget
        from hermes_nb.proxy.rig import real_proxy
        from hermes_nb.proxy.venvs import ensure_hermes

        binary = ensure_hermes(version, install=install, progress=progress)
        with real_proxy(state, provider=provider, hermes_bin=binary) as rig:
            target = SmokeTarget("rig", rig.endpoint, model, hermes_version=rig.hermes_version,
                                 secrets=[*secrets, *rig.redactor.secrets], provider=provider)
            result = run_smoke(target, out_dir=out_dir, only=only, timeout_s=timeout_s, html=html,
                               progress=progress, confirm=False)
        return ci_report(result)

    return run
