"""``hermes-nb smoke``: run the three notebooks headlessly and keep the receipts.

Target: the embedded emulator (default; each notebook gets its own), a live
proxy (``--endpoint``, else ``HERMES_NB_ENDPOINT``; an endpoint that answers from
hermes_nb's emulator gives emulator receipts, see
:func:`hermes_nb.proxy.identity.detect_emulator`) or the real proxy rig
(``--rig stale|live``). Receipts go to ``--out`` (default
``runbooks/receipts/<target kind>/``; emulator and rig receipts are
git-ignored, live ones are meant to be committed).

Exit: 0 all passed, 1 any failed, 3 any blocked (none failed; ``--blocked-exit 0|1`` maps it), 2 usage,
130/143 stopped by SIGINT/SIGTERM (the receipts, index and CI outputs written, the running notebooks
``cancelled``). CI faces (:mod:`hermes_nb.nbrun.ci_report`): ``--junit-xml PATH``, ``--summary-md PATH``
and, when ``GITHUB_STEP_SUMMARY`` is set, the same Markdown appended to it. Everything behind the flags
is one library call, :func:`hermes_nb.nbrun.jobs.smoke`.
"""

from __future__ import annotations

import argparse

from hermes_nb.cli.output import Output
from hermes_nb.core.errors import ConfigError, UsageError
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH
from hermes_nb.core.providers import PROXY_PROVIDERS

DEFAULT_TIMEOUT_S = 120.0  # = hermes_nb.nbrun.jobs.DEFAULT_TIMEOUT_S (a test keeps them equal; not imported: light)


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
                   help="receipts directory or storage URL, e.g. s3://bucket/prefix "
                        f"(default: {RECEIPTS_RELPATH}/<target kind>)")
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


def handle(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.nbrun.jobs import smoke

    try:
        outcome = smoke(endpoint=args.endpoint, rig=args.rig, provider=args.provider,
                        hermes_version=args.hermes_version, upstream=args.upstream, model=args.model, out=args.out,
                        only=args.only,
                        timeout_s=args.timeout, html=not args.no_html, junit_xml=args.junit_xml,
                        summary_md=args.summary_md, blocked_exit=args.blocked_exit,
                        progress=None if out.json_mode else out.info)
    except ConfigError as exc:  # the endpoint or model flag, worded as the flag
        raise UsageError(str(exc).replace("runtime_config: endpoint: ", "--endpoint: ")) from None
    for warning in outcome.warnings:
        out.info(f"warning: {warning}")
    result = outcome.result
    if result is None:
        out.line(f"[{outcome.verdict.upper()}] {outcome.report.get('target_kind')}: {outcome.error}")
    else:
        for r in result.runs:
            out.line(f"[{r.verdict.upper()}] {r.name}: {r.reason}" + (f"  {r.receipt_path}" if r.receipt_path else ""))
            details = (r.summary or {}).get("details") or {}
            for line in details.get("drift") or []:
                out.line(f"  drift: {line}")
            if details.get("upstream_differences"):
                out.line(f"  upstream differences (information): {len(details['upstream_differences'])}")
            if details.get("not_judged") and r.reason != "unreachable":  # unreachable: the action says it all
                out.line(f"  not judged (the upstream's trouble, not drift): {len(details['not_judged'])}, "
                         f"e.g. {details['not_judged'][0]}")
        for action in dict.fromkeys(n["operator_action"] for n in outcome.report.get("notebooks", [])
                                    if n.get("operator_action")):
            out.line(f"action: {action}")  # one line per distinct action (an unreachable proxy: one)
        provider = f"; provider {outcome.report['provider']}" if outcome.report.get("provider") else ""
        out.line(f"smoke {result.verdict} in {result.duration_s:.2f} s{provider}; receipts in {result.out_dir} "
                 f"(run {result.run_id})")
    out.emit(outcome.to_dict())
    return outcome.exit_code
