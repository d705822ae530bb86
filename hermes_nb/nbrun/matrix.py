"""The proxy-version matrix: the smoke against the real proxy of several hermes-agent releases.

For each provider (``providers``, default ``nous``) and version (oldest first): if the release cannot
run the rig state (nous ``live`` on 0.16.0 and 0.17.0, see :mod:`hermes_nb.proxy.venvs`) it is recorded
``unsupported`` and nothing is installed; else its venv is found or built
(:func:`~hermes_nb.proxy.venvs.ensure_hermes`), the real proxy is started in that state with that provider
(:func:`~hermes_nb.proxy.rig.real_proxy`) and the smoke runs against it into its own receipts directory
``<out>/<version>/`` (``<out>/<version>-<provider>/`` for a provider other than nous, as the contracts are
named). The wire-format spike compares every version with the same reference contract (the notebook's
default, ``hermes-agent-0.19.0``, of the provider the proxy fronts), so its drift lines are comparable
across versions.

The matrix summary — ``<out>/matrix.json`` and ``<out>/matrix.md`` — lists each version's status,
verdict, per-notebook verdicts and drift lines, and between consecutive versions that ran: which
notebook verdicts changed and which drift lines appeared or went away ("what drifted between
versions"). The runner is injectable (tests use a fake one; installing releases is slow).

:func:`matrix` is what ``hermes-nb matrix`` runs: the versions checked, the matrix, its CI outputs (JUnit
XML with one testsuite per version, the summary file, ``$GITHUB_STEP_SUMMARY``; every path checked
writable first), ``blocked_exit`` as for the smoke, and SIGINT/SIGTERM handled like the smoke's
(:mod:`hermes_nb.nbrun.jobs`): the version running ends with its cancelled receipts indexed, the versions
after it are recorded ``cancelled``, matrix.json/.md and the CI outputs are written, exit 128 + the signal.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from hermes_nb.core.config import Provider
from hermes_nb.core.facts import EXIT_BLOCKED, NOTEBOOKS, RECEIPTS_RELPATH, env_secrets, worst_verdict
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.spec import CommaList, Opt, Spec
from hermes_nb.harness.signals import Cancelled, SignalGuard
from hermes_nb.proxy.probe import REFERENCE_CONTRACT

__all__ = ["MATRIX_SCHEMA", "REFERENCE_CONTRACT", "DEFAULT_VERSIONS", "VersionRun", "MatrixResult", "run_matrix",
           "rig_runner", "matrix_markdown", "version_key", "matrix"]

MATRIX_SCHEMA = "hermes-nb.proxy-matrix.v1"
#: the hermes-agent releases with a proxy (the command exists from 0.16.0)
DEFAULT_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")

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
    #: ran | unsupported | unavailable (install or rig start failed: the reason says which) | cancelled
    status: str
    verdict: str | None = None
    reason: str | None = None
    out_dir: str | None = None
    report: dict[str, Any] | None = None
    #: ``hermes proxy start --provider``
    provider: str = "nous"

    @property
    def label(self) -> str:
        """``0.19.0``, or ``0.19.0 (xai)`` for a provider other than nous."""
        return self.version if self.provider == "nous" else f"{self.version} ({self.provider})"

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
    #: what a blocked matrix exits with (3, 0 or 1), as ``--blocked-exit`` for the smoke
    blocked_exit: int = EXIT_BLOCKED
    #: the signal that stopped the matrix (``SIGINT``, ``SIGTERM``), None when it ran to the end
    cancelled_by: str | None = None
    providers: tuple[str, ...] = ("nous",)
    #: outputs not written (a version's index, matrix.json, the CI files), one line each: the matrix fails
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.cancelled_by:
            return "cancelled"
        ran = [r.verdict or "failed" for r in self.runs if r.status == "ran"]
        if any(r.status == "unavailable" for r in self.runs):
            ran.append("blocked")
        return worst_verdict(ran) if ran else "blocked"

    @property
    def exit_code(self) -> int:
        from hermes_nb.nbrun.ci_report import smoke_exit_code, with_problems

        return with_problems(smoke_exit_code(self.verdict, self.blocked_exit, self.cancelled_by), self.problems)

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
        for before, after in pairwise(ran):
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
                "blocked_exit": self.blocked_exit, "cancelled_by": self.cancelled_by, "problems": list(self.problems),
                "reference_contract": REFERENCE_CONTRACT, "out_dir": str(self.out_dir),
                "providers": list(self.providers),
                "duration_s": round(self.duration_s, 3), "versions": [r.to_dict() for r in self.runs],
                "changes": self.changes(),
                "support": {p: support_table(versions, p) for p in self.providers}}


class MatrixSpec(Spec):
    """The matrix's options (``hermes-nb matrix``)."""

    versions: Annotated[list[str], CommaList] = Field(list(DEFAULT_VERSIONS), description="hermes-agent releases")
    state: Literal["live", "stale"] = Field("live", description="the rig's auth state")
    providers: Annotated[list[Provider], CommaList] = Field(["nous"], description="`hermes proxy start --provider` "
                                                                                  "for each run")
    model: str | None = Field(None, description="model id for every run (default: the provider's default model)")
    out: str | None = Field(None, description=f"output directory (default: {RECEIPTS_RELPATH}/matrix)")
    only: Annotated[list[Literal["wire_format_spike", "adapter_check", "e2e_smoke"]], Opt(repeat=True)] = Field(
        default_factory=list, description="run only this notebook (repeatable)")
    cell_timeout_s: float = Field(120.0, gt=0, description="the longest run of one notebook cell")
    html: bool = Field(True, description="write each receipt's HTML render")
    install: bool = Field(True, description="build a missing release's venv (off: only cached or adoptable venvs; "
                                            "a missing release is unavailable)")
    junit_xml: str | None = Field(None, description="write JUnit XML here (one testsuite per version)")
    summary_md: str | None = Field(None, description="write the matrix summary here (also appended to "
                                                     "$GITHUB_STEP_SUMMARY when set)")
    blocked_exit: Literal[3, 0, 1] = Field(3, description="the exit code of a blocked matrix (e.g. --state stale, "
                                                          "blocked by design): 3, 0 or 1")


def matrix_markdown(doc: dict[str, Any]) -> str:
    """The matrix summary as Markdown (``doc``: :meth:`MatrixResult.to_dict`)."""
    from hermes_nb.receipts.ci import md_cell

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
               redactor: Redactor | None = None, blocked_exit: int = EXIT_BLOCKED,
               providers: Sequence[str] = ("nous",)) -> MatrixResult:
    """Run ``runner`` for every provider and version that supports ``state``; write ``matrix.json`` and
    ``matrix.md``.

    A runner that raises :class:`~hermes_nb.harness.signals.Cancelled` (a signal while a venv or rig started),
    or whose report says ``cancelled_by``, stops the matrix: the versions after it are recorded ``cancelled``."""
    from hermes_nb.core.errors import ArtifactError, HermesError
    from hermes_nb.nbrun.jobs import signal_name
    from hermes_nb.proxy.contracts import contract_file_name
    from hermes_nb.proxy.venvs import unsupported_reason

    check = support or unsupported_reason
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = MatrixResult(state=state, out_dir=out_dir, blocked_exit=blocked_exit,
                          providers=tuple(dict.fromkeys(providers)))
    say = progress or (lambda _line: None)
    order = sorted(dict.fromkeys(versions), key=version_key)
    for provider, version in ((p, v) for p in result.providers for v in order):
        run = VersionRun(version, state, "ran", provider=provider)
        if result.cancelled_by:
            run.status, run.reason = "cancelled", f"not run: {result.cancelled_by}"
            result.runs.append(run)
            continue
        why = check(version, state, provider)
        if why is not None:
            run.status, run.reason = "unsupported", why
            result.runs.append(run)
            say(f"{run.label}: unsupported: {why}")
            continue
        target = out_dir / contract_file_name(version, provider)
        run.out_dir = str(target)
        try:
            report = runner(version, state, target, provider)
        except HermesError as exc:  # no venv, install failed, rig refused or did not start
            run.status, run.reason = "unavailable", str(exc)
            result.runs.append(run)
            say(f"{run.label}: unavailable: {exc}")
            continue
        except Cancelled as exc:  # while its venv was built or its rig started: no notebook ran
            result.cancelled_by = signal_name(exc)
            run.status, run.reason = "cancelled", f"cancelled by {result.cancelled_by} before its notebooks ran"
            result.runs.append(run)
            say(f"{run.label}: cancelled by {result.cancelled_by}")
            continue
        run.verdict, run.reason, run.report = report.get("verdict"), f"exit {report.get('exit_code')}", report
        result.problems += report.get("problems") or []
        result.runs.append(run)
        result.cancelled_by = report.get("cancelled_by") or None
        say(f"{run.label}: {report.get('verdict')}")
    result.duration_s = time.perf_counter() - t0
    from hermes_nb.core.io import write_atomic
    from hermes_nb.receipts.write import check_clean

    redactor = redactor or Redactor()
    doc = redactor.data(result.to_dict())
    for name, text in (("matrix.json", json.dumps(doc, indent=2, ensure_ascii=False) + "\n"),
                       ("matrix.md", matrix_markdown(doc))):
        check_clean(name, text, redactor)  # redacted, then scanned: a secret refuses the write
        try:
            write_atomic(out_dir / name, text)
        except ArtifactError as exc:  # e.g. the disk filled up: the matrix fails naming the file
            result.problems.append(str(exc))
    return result


def rig_runner(*, install: bool = True, only: Sequence[str] | None = None, timeout_s: float = 120.0,
               html: bool = True, model: str | None = None, secrets: Sequence[str] = (),
               progress: Callable[[str], None] | None = None, guard: SignalGuard | None = None,
               environ: Mapping[str, str] | None = None) -> Runner:
    """The real runner: the version's venv, the real proxy in ``state``, the smoke against it. ``guard``: the
    matrix's signal guard, armed while the venv is built and the rig starts, and by the smoke while it runs."""
    def run(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict[str, Any]:
        from hermes_nb.core.resolve import resolve_runtime_config
        from hermes_nb.nbrun.ci_report import ci_report
        from hermes_nb.nbrun.smoke import run_smoke
        from hermes_nb.proxy.rig import real_proxy
        from hermes_nb.proxy.venvs import ensure_hermes
        from hermes_nb.target import establish

        with ExitStack() as stack:
            if guard is not None:
                guard.arm()
            try:
                binary = ensure_hermes(version, install=install, progress=progress)
                rig = stack.enter_context(real_proxy(state, provider=provider, hermes_bin=binary))
            finally:
                if guard is not None:
                    guard.armed = False
            config = resolve_runtime_config(environ=environ, model=model, provider=provider)
            target, config = establish(config, stack, rig=rig)
            result = run_smoke(target, config, out_dir=out_dir, only=only, timeout_s=timeout_s, html=html,
                               progress=progress, secrets=[*secrets, *rig.redactor.secrets], guard=guard)
        return ci_report(result, environ=environ)

    return run


def _junit_suites(result: MatrixResult, environ: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """One JUnit testsuite per version: its smoke's report; one case for a version that did not run."""
    from hermes_nb.nbrun.ci_report import not_started_report

    suites = []
    for v in result.runs:
        name = f"hermes-nb matrix {result.state} hermes-agent {v.label}"
        if v.report is not None:
            suites.append((name, v.report))
            continue
        verdict = {"unavailable": "blocked", "cancelled": "cancelled"}.get(v.status, "unsupported")
        suites.append((name, not_started_report(str(v.reason), target_kind="rig", verdict=verdict,
                                                hermes_version=v.version, blocked_exit=result.blocked_exit,
                                                cancelled_by=result.cancelled_by if verdict == "cancelled" else None,
                                                environ=environ)))
    return suites


def matrix(versions: Sequence[str] = DEFAULT_VERSIONS, *, state: str = "live", out: str | Path | None = None,
           only: Sequence[str] | None = None, timeout_s: float = 120.0, html: bool = True, install: bool = True,
           junit_xml: str | Path | None = None, summary_md: str | Path | None = None,
           step_summary: str | Path | None = None, blocked_exit: int = EXIT_BLOCKED,
           environ: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None,
           handle_signals: bool = True, runner: Runner | None = None, providers: Sequence[str] = ("nous",),
           model: str | None = None) -> tuple[MatrixResult, dict[str, Any]]:
    """Run the matrix as ``hermes-nb matrix`` does; returns the result and its document (``--json``:
    :meth:`MatrixResult.to_dict` plus the CI outputs written and any warnings). Bad arguments and unwritable
    outputs raise :class:`~hermes_nb.core.errors.UsageError` before anything runs."""
    from hermes_nb.core.errors import UsageError
    from hermes_nb.core.io import prove_dir
    from hermes_nb.nbrun.ci_report import BLOCKED_EXIT_CHOICES, check_output_paths, step_summary_path, write_ci_outputs
    from hermes_nb.nbrun.jobs import quiet_notebook_loggers
    from hermes_nb.proxy.venvs import _check_version

    env = os.environ if environ is None else environ
    versions = [v.strip() for v in versions if v.strip()]
    if not versions:
        raise UsageError("name at least one hermes-agent version")
    for v in versions:
        _check_version(v)
    if state not in ("live", "stale"):
        raise UsageError(f"unknown rig state {state!r}; choose live or stale")
    from hermes_nb.core.providers import PROXY_PROVIDERS

    providers = [p.strip() for p in providers if p.strip()]
    unknown = [p for p in providers if p not in PROXY_PROVIDERS]
    if not providers or unknown:
        raise UsageError(f"providers: {', '.join(unknown) or 'name at least one'}; choose from "
                         f"{', '.join(PROXY_PROVIDERS)}")
    if not timeout_s > 0:
        raise UsageError(f"the cell timeout must be > 0 seconds, got {timeout_s:g}")
    if blocked_exit not in BLOCKED_EXIT_CHOICES:
        raise UsageError(f"the exit code of a blocked matrix must be one of 3, 0, 1, got {blocked_exit!r}")
    check_output_paths(junit_xml=junit_xml, summary_md=summary_md)
    warnings: list[str] = []
    step = step_summary_path(step_summary, env, warnings)
    out_dir = prove_dir(Path(out) if out is not None else RECEIPTS_RELPATH / "matrix", "receipts directory")
    quiet_notebook_loggers()
    secrets = env_secrets(env)
    redactor = Redactor(secrets)
    with SignalGuard(handle_signals) as guard:
        run = runner or rig_runner(install=install, only=only, timeout_s=timeout_s, html=html, secrets=secrets,
                                   progress=progress, guard=guard, environ=env, model=model)
        result = run_matrix(versions, state=state, out_dir=out_dir, runner=run, progress=progress,
                            redactor=redactor, blocked_exit=blocked_exit, providers=providers)
    doc = redactor.data(result.to_dict())
    from hermes_nb.receipts.ci import junit_suites_text

    text = junit_suites_text(_junit_suites(result, env), name=f"hermes-nb matrix {state}") if junit_xml else None
    report = {"verdict": doc["verdict"], "exit_code": doc["exit_code"], "notebooks": []}
    written = write_ci_outputs(report, redactor=redactor, junit_xml=junit_xml, summary_md=summary_md,
                               step_summary=step, warnings=warnings, problems=result.problems, junit_text=text,
                               summary_text=matrix_markdown(doc))
    return result, {**doc, "exit_code": result.exit_code, "problems": list(result.problems), "warnings": warnings,
                    **written}
