"""``hermes-nb smoke``: run the three notebooks headlessly and keep the receipts.

Target: the embedded emulator (default; each notebook starts its own), a live
proxy (``--endpoint``, else ``HERMES_NB_ENDPOINT``; an endpoint that answers from
hermes_nb's emulator gives emulator receipts, see
:func:`hermes_nb.proxy.identity.detect_emulator`) or the real proxy rig
(``--rig stale|live``). Receipts go to ``--out`` (default
``runbooks/receipts/<target kind>/``; emulator and rig receipts are
git-ignored, live ones are meant to be committed).

Exit: 0 all passed, 1 any failed, 3 any blocked (none failed; ``--blocked-exit 0|1`` maps it), 2 usage.
CI faces (:mod:`hermes_nb.nbrun.ci_report`): ``--junit-xml PATH``, ``--summary-md PATH`` and, when
``GITHUB_STEP_SUMMARY`` is set, the same Markdown appended to it.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ConfigError, RigError, UsageError
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH
from hermes_nb.core.providers import PROXY_PROVIDERS
from hermes_nb.receipts.store import is_url

DEFAULT_TIMEOUT_S = 120.0


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "smoke", parents=[parent], help="run the notebooks headlessly into receipt notebooks",
        description="Execute wire_format_spike, adapter_check and e2e_smoke concurrently through papermill "
                    "(fresh kernel each) and write receipts: <out>/<UTC date>/<run id>/<notebook>.ipynb + .html "
                    "+ .receipt.json, and <out>/index.json + README.md.",
    )
    target = p.add_mutually_exclusive_group()
    target.add_argument("--endpoint", metavar="URL",
                        help="a live proxy (http://127.0.0.1:8645/v1); default: $HERMES_NB_ENDPOINT, else the emulator")
    target.add_argument("--rig", choices=("stale", "live"), help="start the real proxy rig in this auth state")
    p.add_argument("--provider", choices=PROXY_PROVIDERS,
                   help="with --rig: `hermes proxy start --provider` (default nous). A live proxy's provider is "
                        "what its /health says (HERMES_NB_PROVIDER: the one you expect; a mismatch warns)")
    p.add_argument("--hermes-version", metavar="V",
                   help="with --rig: run the real proxy of this hermes-agent release from its cached venv "
                        "(built on first use; see `hermes-nb matrix`)")
    p.add_argument("--upstream", metavar="emulator|minimal|CMD",
                   help="with --rig live: what answers behind the proxy (default emulator; see `hermes-nb rig`)")
    p.add_argument("--model", metavar="M", help="model id (default: $HERMES_NB_MODEL, else the notebooks' default)")
    p.add_argument("--out", metavar="DIR|URL",
                   help=f"receipts directory or storage URL, e.g. s3://bucket/prefix (default: {RECEIPTS_RELPATH}/<target kind>)")
    p.add_argument("--only", metavar="NAME", action="append", choices=NOTEBOOKS,
                   help="run only this notebook (repeatable)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"execution timeout per cell, seconds (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--no-html", action="store_true", help="skip the HTML renders")
    p.add_argument("--junit-xml", metavar="PATH", help="write JUnit XML (one testsuite, one testcase per notebook)")
    p.add_argument("--summary-md", metavar="PATH",
                   help="write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--blocked-exit", type=int, choices=(3, 0, 1), default=3, metavar="{3,0,1}",
                   help="exit code of a blocked smoke: 3 (default), 0 (do not fail CI) or 1 (fail like a failure)")
    p.set_defaults(handler=handle)


def _live_hermes_version(endpoint: str) -> str:
    """The live proxy's hermes-agent version: its ``/health``, else the local `hermes`, else "unknown"."""
    from hermes_nb.proxy.identity import hermes_agent_version

    return hermes_agent_version(endpoint)[0]


def _live_provider(endpoint: str) -> str | None:
    """The provider a live proxy fronts: its ``/health``'s ``upstream`` (None when it does not say)."""
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.proxy.detect import detect_provider, fetch_health
    from hermes_nb.wire.client import HermesClient

    with HermesClient(HermesProxyRuntimeConfig(endpoint=endpoint, model="provider-check")) as client:
        return detect_provider(health=fetch_health(client)).provider


def _not_started(args: argparse.Namespace, out: Any, error: str, secrets: list[str]) -> int:
    """The rig refused or did not come up: JUnit/summary still say so (blocked), exit per --blocked-exit."""
    from hermes_nb.core.redaction import Redactor
    from hermes_nb.nbrun.ci_report import not_started_report, write_ci_outputs

    redactor = Redactor(secrets)
    report = not_started_report(error, target_kind="rig", blocked_exit=args.blocked_exit,
                                hermes_version=args.hermes_version, redactor=redactor)
    report["provider"] = args.provider or "nous"
    written = write_ci_outputs(report, redactor=redactor, junit_xml=args.junit_xml, summary_md=args.summary_md,
                               step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None)
    out.line(f"[BLOCKED] rig: {redactor.text(error)}")
    out.emit({"error": redactor.text(error), "verdict": "blocked", "target_kind": "rig", "provider": report["provider"],
              "exit_code": report["exit_code"], "blocked_exit": args.blocked_exit, **written})
    return int(report["exit_code"])


def handle(args: argparse.Namespace, out: Any) -> int:
    from hermes_nb.core.resolve import resolve_runtime_config
    from hermes_nb.nbrun.smoke import run_smoke
    from hermes_nb.nbrun.smoke_target import SmokeTarget, confirm_target

    if args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout:g}")
    if args.hermes_version and not args.rig:
        raise UsageError("--hermes-version needs --rig stale|live")
    if args.provider is not None and not args.rig:
        raise UsageError("--provider needs --rig stale|live (a live proxy says which provider it fronts)")
    if args.upstream is not None and args.rig != "live":
        raise UsageError("--upstream needs --rig live (it chooses what answers behind the rig's proxy)")
    if args.model is not None and not args.model.strip():
        raise UsageError("--model must not be empty")
    from hermes_nb.nbrun.kernels import zygote_env
    from hermes_nb.nbrun.zygote import prestart

    prestart(zygote_env())  # the kernel fork server imports while this process does (HERMES_NB_KERNEL_FORK=0: off)
    try:
        config = resolve_runtime_config(endpoint=args.endpoint, model=args.model)
    except ConfigError as exc:
        raise UsageError(str(exc).replace("runtime_config: endpoint: ", "--endpoint: ")) from None
    # papermill/nbclient log cell errors and timeouts themselves; our progress line says the same once
    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    secrets = config.secrets()
    model = config.model if config.origin("model") != "default" else None
    with ExitStack() as stack:
        if args.rig:
            from hermes_nb.proxy.rig import real_proxy

            hermes_bin = None
            try:
                if args.hermes_version:  # a cached per-version venv (hermes_nb.proxy.venvs)
                    from hermes_nb.proxy.venvs import ensure_hermes, unsupported_reason

                    why = unsupported_reason(args.hermes_version, args.rig, args.provider or "nous")
                    if why is not None:
                        raise RigError(why)
                    hermes_bin = ensure_hermes(args.hermes_version, progress=None if out.json_mode else out.info)
                out.info(f"starting the real proxy rig ({args.rig}, --provider {args.provider or 'nous'})")
                rig = stack.enter_context(real_proxy(args.rig, provider=args.provider or "nous", hermes_bin=hermes_bin,
                                                     upstream=args.upstream or "emulator"))
            except RigError as exc:  # blocked before any notebook ran: CI still gets its report
                return _not_started(args, out, str(exc), secrets)
            target = SmokeTarget("rig", rig.endpoint, model, hermes_version=rig.hermes_version,
                                 secrets=secrets + rig.redactor.secrets, provider=rig.provider)
        elif config.origin("endpoint") != "default":
            target = confirm_target(SmokeTarget("live", config.endpoint, model, secrets=secrets,
                                                endpoint_origin=config.origin("endpoint")))
            if target.kind == "live":  # else: an emulator behind the endpoint (run_smoke says so)
                target.hermes_version = _live_hermes_version(config.endpoint)
            target.provider = _live_provider(config.endpoint) or config.provider
        else:
            target = SmokeTarget("emulator", None, model, secrets=secrets)
        from hermes_nb.core.endpoint_safety import plain_http_warning

        if (insecure := plain_http_warning(target.endpoint)) is not None:  # also in every receipt
            out.info(f"warning: {insecure}")
        out_dir = Path(args.out) if args.out else RECEIPTS_RELPATH / target.kind
        store = staging = None
        if args.out and is_url(args.out):  # shared storage: stage locally, publish after the run
            from hermes_nb.receipts.store import open_store

            store = open_store(args.out)
            store.check()
            staging = out_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-nb-stage-")))
        say = None if out.json_mode else out.info
        try:
            result = run_smoke(target, out_dir=out_dir, only=args.only, timeout_s=args.timeout,
                               html=not args.no_html, progress=say, confirm=False)
        except KeyboardInterrupt:  # the receipts of an interrupted run say so; publish them before exit 130
            if store is not None and staging is not None:
                store.publish(staging)
            raise
        if store is not None and staging is not None:
            store.publish(staging, result.run_id)
            where = functools.partial(store.locate, staging=staging)
            for r in result.runs:
                r.receipt_path = where(r.receipt_path) if r.receipt_path else None  # type: ignore[assignment]
            result.out_dir = store.url  # type: ignore[assignment]
    from hermes_nb.core.redaction import Redactor
    from hermes_nb.nbrun.ci_report import ci_report, write_ci_outputs

    redactor = Redactor(result.target.secrets)
    report = ci_report(result, blocked_exit=args.blocked_exit, redactor=redactor)
    written = write_ci_outputs(report, redactor=redactor, junit_xml=args.junit_xml, summary_md=args.summary_md,
                               step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None)
    for r in result.runs:
        out.line(f"[{r.verdict.upper()}] {r.name}: {r.reason}" + (f"  {r.receipt_path}" if r.receipt_path else ""))
        details = (r.summary or {}).get("details") or {}
        out_lines = [f"  drift: {line}" for line in details.get("drift") or []]
        if details.get("upstream_differences"):
            out_lines.append(f"  upstream differences (information): {len(details['upstream_differences'])}")
        if details.get("not_judged") and r.reason != "unreachable":  # unreachable: the action says it all
            out_lines.append(f"  not judged (the upstream's trouble, not drift): {len(details['not_judged'])}, "
                             f"e.g. {details['not_judged'][0]}")
        for line in out_lines:
            out.line(line)
    for action in dict.fromkeys(n["operator_action"] for n in report["notebooks"] if n.get("operator_action")):
        out.line(f"action: {action}")  # one line per distinct action (an unreachable proxy: one)
    provider = f"; provider {report['provider']}" if report.get("provider") else ""
    out.line(f"smoke {result.verdict} in {result.duration_s:.2f} s{provider}; receipts in {result.out_dir} "
             f"(run {result.run_id})")
    out.emit({**result.to_dict(), "exit_code": report["exit_code"], "blocked_exit": args.blocked_exit, **written})
    return int(report["exit_code"])
