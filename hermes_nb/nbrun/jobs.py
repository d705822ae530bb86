"""The smoke as one library call: what ``hermes-nb smoke`` runs, so a notebook or a script gets the same.

:func:`smoke` does everything the command does, and the command only turns its flags into this call and
prints the outcome:

* the **target** (:func:`choose_target`): the embedded emulator; a live endpoint (checked for an emulator
  behind it, its hermes-agent version read); or the real-proxy rig, from a cached per-version venv when a
  hermes-agent version is asked for (:mod:`hermes_nb.proxy.venvs`);
* **storage**: receipts for a storage URL (``s3://…``) are staged in a private directory, then published
  (:mod:`hermes_nb.receipts.store`), an interrupted run's too;
* the **CI outputs** (:mod:`hermes_nb.nbrun.ci_report`): JUnit XML, the Markdown summary and
  ``$GITHUB_STEP_SUMMARY``; every output path is checked writable before anything runs;
* **signals**, in this one place for the smoke and the matrix (:func:`hermes_nb.nbrun.matrix.matrix`): SIGINT,
  SIGTERM (what a CI runner sends when it cancels a job) and SIGHUP, main thread only. The notebooks still
  running are recorded ``cancelled`` with what they had, the finished receipts are kept and indexed, the CI
  outputs name the cancelled cases, the staging directory, kernels and their temporary files are removed,
  and the exit code is 128 + the signal (130 for SIGINT, 143 for SIGTERM). A signal after the notebooks
  finished changes nothing: the outputs are written and the verdict stands.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.facts import EXIT_BLOCKED, RECEIPTS_RELPATH
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.signals import SIGNAL_NAMES, Cancelled, SignalGuard
from hermes_nb.nbrun.ci_report import (
    BLOCKED_EXIT_CHOICES,
    check_output_paths,
    ci_report,
    not_started_report,
    step_summary_path,
    write_ci_outputs,
)
from hermes_nb.nbrun.smoke_target import SmokeTarget

if TYPE_CHECKING:  # the runner loads once the arguments are checked
    from hermes_nb.nbrun.smoke import SmokeResult

__all__ = ["DEFAULT_TIMEOUT_S", "SmokeOutcome", "smoke", "choose_target", "quiet_notebook_loggers", "signal_name"]

DEFAULT_TIMEOUT_S = 120.0
RIG_STATES = ("stale", "live")


def quiet_notebook_loggers() -> None:
    """papermill/nbclient log cell errors and timeouts themselves; our progress lines say the same once."""
    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def signal_name(exc: BaseException) -> str:
    """``SIGTERM`` for :class:`Cancelled` (15), ``SIGINT`` for a plain ``KeyboardInterrupt``."""
    return SIGNAL_NAMES.get(getattr(exc, "signum", 2), "SIGINT")


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

    @property
    def verdict(self) -> str:
        return str(self.report["verdict"])

    @property
    def exit_code(self) -> int:
        return int(self.report["exit_code"])

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: the smoke's result (or the reason it did not start), the exit code, the outputs."""
        redactor = Redactor(self.result.target.secrets if self.result is not None else ())
        head = (self.result.to_dict() if self.result is not None
                else {"error": self.error, "verdict": self.verdict, "target_kind": self.report.get("target_kind")})
        return redactor.data({**head, "exit_code": self.exit_code, "blocked_exit": self.report.get("blocked_exit"),
                              "ci_run_url": self.report.get("ci_run_url"), "warnings": list(self.warnings),
                              **self.written})

    def _repr_html_(self) -> str:
        return self.result._repr_html_() if self.result is not None else f"<p>smoke {self.verdict}: {self.error}</p>"


def choose_target(*, endpoint: str | None = None, model: str | None = None, rig: Any = None,
                  secrets: Sequence[str] = (), endpoint_origin: str | None = "argument",
                  provider: str | None = None) -> SmokeTarget:
    """Where the notebooks point: the started ``rig`` (a :class:`~hermes_nb.proxy.rig.RigHandle`), else a live
    ``endpoint`` (checked: an emulator behind it makes the target ``emulator``; its hermes-agent version read
    from ``/health`` or the local ``hermes``; its provider from ``/health``, else ``provider``, the configured
    one), else the embedded emulator (each notebook gets its own,
    :mod:`hermes_nb.nbrun.emulators`)."""
    from hermes_nb.nbrun.smoke_target import confirm_target

    if rig is not None:
        return SmokeTarget("rig", rig.endpoint, model, hermes_version=rig.hermes_version,
                           secrets=[*secrets, *rig.redactor.secrets], provider=rig.provider)
    if endpoint is None:
        return SmokeTarget("emulator", None, model, secrets=list(secrets))
    target = confirm_target(SmokeTarget("live", endpoint, model, secrets=list(secrets),
                                        endpoint_origin=endpoint_origin))
    if target.kind == "live":  # an emulator behind the endpoint is labelled emulator (the result says why)
        from hermes_nb.proxy.identity import hermes_agent_version

        target.hermes_version = hermes_agent_version(endpoint)[0]
    target.provider = _live_provider(endpoint) or provider
    return target


def _live_provider(endpoint: str) -> str | None:
    """The provider a live proxy fronts: its ``/health``'s ``upstream`` (None when it does not say)."""
    from hermes_nb.proxy.detect import detect_provider, fetch_health
    from hermes_nb.wire.client import HermesClient

    with HermesClient(endpoint) as client:
        return detect_provider(health=fetch_health(client)).provider


def _check(*, timeout_s: float, rig: str | None, hermes_version: str | None, upstream: str | None,
           model: str | None, blocked_exit: int, provider: str | None = None) -> None:
    """Every argument, before anything runs (one line each; worded for any caller, not as CLI flags)."""
    from hermes_nb.core.providers import PROXY_PROVIDERS

    if not timeout_s > 0:
        raise UsageError(f"the cell timeout must be > 0 seconds, got {timeout_s:g}")
    if rig is not None and rig not in RIG_STATES:
        raise UsageError(f"unknown rig state {rig!r}; choose stale or live")
    if provider is not None and not rig:
        raise UsageError("a provider needs the rig (stale or live): a live proxy says which provider it fronts")
    if provider is not None and provider not in PROXY_PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}; choose one of {', '.join(PROXY_PROVIDERS)}")
    if hermes_version and not rig:
        raise UsageError("a hermes-agent version needs the rig (stale or live): it runs that release's real proxy")
    if upstream is not None and rig != "live":
        raise UsageError("an upstream needs the live rig (it chooses what answers behind the rig's proxy)")
    if model is not None and not model.strip():
        raise UsageError("the model must not be empty")
    if blocked_exit not in BLOCKED_EXIT_CHOICES:
        raise UsageError(f"the exit code of a blocked smoke must be one of 3, 0, 1, got {blocked_exit!r}")


def _receipts_home(out: str | Path | None) -> Path:
    """The directory receipts go to is checked before anything runs (created if needed, writable)."""
    from hermes_nb.nbrun.smoke import writable_dir

    return writable_dir(Path(out) if out else RECEIPTS_RELPATH)


def smoke(*, endpoint: str | None = None, rig: str | None = None, provider: str | None = None,
          hermes_version: str | None = None,
          upstream: str | None = None, model: str | None = None, out: str | Path | None = None,
          only: Sequence[str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S, html: bool = True,
          junit_xml: str | Path | None = None, summary_md: str | Path | None = None,
          step_summary: str | Path | None = None, blocked_exit: int = EXIT_BLOCKED,
          environ: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None,
          handle_signals: bool = True) -> SmokeOutcome:
    """Run the smoke as ``hermes-nb smoke`` does (see the module docstring); never raises for a verdict.

    ``endpoint`` None: ``$HERMES_NB_ENDPOINT``, else the embedded emulator; ``rig``: ``stale``/``live``
    (``provider``: the rig's ``hermes proxy start --provider``, default nous);
    ``out``: a directory or a storage URL (default ``runbooks/receipts/<target kind>``); ``step_summary``:
    default ``$GITHUB_STEP_SUMMARY``. Bad arguments and unwritable outputs raise :class:`UsageError`
    (exit 2) before anything runs.
    """
    env = os.environ if environ is None else environ
    _check(timeout_s=timeout_s, rig=rig, hermes_version=hermes_version, upstream=upstream, model=model,
           blocked_exit=blocked_exit, provider=provider)
    from hermes_nb.receipts.store import is_url, open_store

    check_output_paths(junit_xml=junit_xml, summary_md=summary_md)
    warnings: list[str] = []
    step = step_summary_path(step_summary, env, warnings)
    store = open_store(str(out)) if out is not None and is_url(out) else None
    if store is not None:
        store.check()
    else:
        _receipts_home(out)
    with ExitStack() as cleanup:
        kernels = None
        if not rig:  # the kernels boot while the config and the target resolve (a rig first: it may take minutes)
            from hermes_nb.nbrun.smoke import launch_kernels

            kernels = launch_kernels(only)
            cleanup.callback(kernels.close)  # run_smoke takes them over; stopped here if it is never reached
        from hermes_nb.core.resolve import resolve_runtime_config

        config = resolve_runtime_config(endpoint=endpoint, model=model, environ=env)
        live_endpoint = config.endpoint if config.origin("endpoint") != "default" and not rig else None
        secrets = config.secrets()
        chosen_model = config.model if config.origin("model") != "default" else None
        say = progress or (lambda _line: None)
        quiet_notebook_loggers()

        def finish(report: dict[str, Any], result: SmokeResult | None, error: str | None) -> SmokeOutcome:
            redactor = Redactor(result.target.secrets if result is not None else secrets)
            written = write_ci_outputs(report, redactor=redactor, junit_xml=junit_xml, summary_md=summary_md,
                                       step_summary=step, warnings=warnings)
            return SmokeOutcome(report, result, written, warnings, error)

        with SignalGuard(handle_signals) as guard, ExitStack() as stack:
            target: SmokeTarget | None = None
            try:
                guard.arm()  # a signal while the target starts stops it here (the rig's context cleans up)
                handle = None
                if rig:
                    handle = _start_rig(stack, rig, hermes_version=hermes_version, upstream=upstream, say=say,
                                        json_quiet=progress is None, provider=provider or "nous")
                target = choose_target(endpoint=live_endpoint, model=chosen_model, rig=handle, secrets=secrets,
                                       endpoint_origin=config.origin("endpoint"), provider=config.provider)
                guard.armed = False  # run_smoke arms it again while the notebooks run
            except RigError as exc:  # blocked before any notebook ran: CI still gets its report
                guard.armed = False
                error = Redactor(secrets).text(str(exc))
                report = not_started_report(error, target_kind="rig", blocked_exit=blocked_exit,
                                            hermes_version=hermes_version, environ=env, redactor=Redactor(secrets))
                report["provider"] = provider or "nous"
                return finish(report, None, error)
            except Cancelled as exc:
                error = f"cancelled by {signal_name(exc)} before any notebook ran"
                kind = "rig" if rig else (target.kind if target else "emulator")
                report = not_started_report(error, target_kind=kind, blocked_exit=blocked_exit, verdict="cancelled",
                                            cancelled_by=signal_name(exc), environ=env, redactor=Redactor(secrets))
                return finish(report, None, error)
            from hermes_nb.core.endpoint_safety import plain_http_warning

            if (insecure := plain_http_warning(target.endpoint)) is not None:  # also in every receipt
                say(f"warning: {insecure}")
            out_dir = Path(out) if out is not None and store is None else RECEIPTS_RELPATH / target.kind
            staging = None
            if store is not None:  # shared storage: stage locally, publish after the run (an interrupted one too)
                staging = out_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-nb-stage-")))
            from hermes_nb.nbrun.smoke import run_smoke

            result = run_smoke(target, out_dir=out_dir, only=only, timeout_s=timeout_s, html=html,
                               progress=progress, confirm=False, guard=guard, kernels=kernels)
            locate = None
            if store is not None and staging is not None:
                store.publish(staging, result.run_id, redactor=Redactor(result.target.secrets))
                locate = functools.partial(store.locate, staging=staging)
                for r in result.runs:
                    r.receipt_path = locate(r.receipt_path) if r.receipt_path else None
                result.out_dir = store.url
            redactor = Redactor(result.target.secrets)
            report = ci_report(result, blocked_exit=blocked_exit, redactor=redactor, environ=env)
            return finish(report, result, None)


def _start_rig(stack: ExitStack, state: str, *, hermes_version: str | None, upstream: str | None,
               say: Callable[[str], None], json_quiet: bool, provider: str = "nous") -> Any:
    """The real proxy in ``state`` with ``--provider provider`` (from the cached venv of ``hermes_version`` when
    given), entered on ``stack``."""
    from hermes_nb.proxy.rig import real_proxy

    hermes_bin = None
    if hermes_version:
        from hermes_nb.proxy.venvs import ensure_hermes, unsupported_reason

        why = unsupported_reason(hermes_version, state, provider)
        if why is not None:
            raise RigError(why)
        hermes_bin = ensure_hermes(hermes_version, progress=None if json_quiet else say)
    say(f"starting the real proxy rig ({state}, --provider {provider})")
    return stack.enter_context(real_proxy(state, provider=provider, hermes_bin=hermes_bin,
                                          upstream=upstream or "emulator"))

