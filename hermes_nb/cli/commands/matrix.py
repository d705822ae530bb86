"""``hermes-nb matrix``: the smoke against the real proxy of several hermes-agent releases.

Each version runs in its own cached venv (``$HERMES_NB_CACHE_DIR``, default the user cache dir;
:mod:`hermes_nb.proxy.venvs`) and provider (``--providers nous,xai``), writes one receipts run under
``<out>/<version>/`` (``<out>/<version>-xai/``), and the matrix
summary goes to ``<out>/matrix.json`` and ``<out>/matrix.md`` (also appended to
``$GITHUB_STEP_SUMMARY`` when set). Versions that cannot run the state are listed as unsupported
(``live`` on 0.16.0 and 0.17.0).

Exit: 0 every version that ran passed, 1 any failed, 3 any blocked or unavailable (or none ran;
``--blocked-exit 0|1`` maps it), 2 usage, 130/143 stopped by SIGINT/SIGTERM. CI faces as for the smoke:
``--junit-xml`` (one testsuite per version), ``--summary-md``, ``$GITHUB_STEP_SUMMARY``. Everything behind
the flags is one library call, :func:`hermes_nb.nbrun.matrix.matrix`.
"""

from __future__ import annotations

import argparse

from hermes_nb.cli.output import Output
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH
from hermes_nb.core.providers import PROXY_PROVIDERS

# = hermes_nb.nbrun.matrix.DEFAULT_VERSIONS (a test keeps them equal; not imported: `--help` stays light)
DEFAULT_VERSIONS = "0.16.0,0.17.0,0.18.0,0.18.1,0.18.2,0.19.0"


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("matrix", parents=[parent], help="run the smoke against several hermes-agent releases",
                       description="For each version: its own cached venv, the real proxy rig in --state, the "
                                   "smoke into <out>/<version>/; then <out>/matrix.json and matrix.md naming "
                                   "what drifted between versions.")
    p.add_argument("--versions", default=DEFAULT_VERSIONS, metavar="V,V,…",
                   help=f"hermes-agent releases (default {DEFAULT_VERSIONS})")
    p.add_argument("--state", choices=("live", "stale"), default="live", help="rig state (default live)")
    p.add_argument("--providers", default="nous", metavar="P,P",
                   help=f"`hermes proxy start --provider` for each run: {', '.join(PROXY_PROVIDERS)} (default nous)")
    p.add_argument("--model", metavar="M",
                   help="model id for every run (default: each notebook's: the provider's default model)")
    p.add_argument("--out", metavar="DIR", help=f"output directory (default {RECEIPTS_RELPATH}/matrix)")
    p.add_argument("--only", metavar="NAME", action="append", choices=NOTEBOOKS,
                   help="run only this notebook (repeatable)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S", help="execution timeout per cell, seconds")
    p.add_argument("--no-html", action="store_true", help="skip the HTML renders")
    p.add_argument("--no-install", action="store_true",
                   help="use only cached (or adoptable) venvs; a missing version is unavailable")
    p.add_argument("--junit-xml", metavar="PATH", help="write JUnit XML (one testsuite per version)")
    p.add_argument("--summary-md", metavar="PATH",
                   help="write the matrix summary here (also appended to $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--blocked-exit", type=int, choices=(3, 0, 1), default=3, metavar="{3,0,1}",
                   help="exit code of a blocked matrix (e.g. --state stale, blocked by design): 3 (default), 0 or 1")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.nbrun.matrix import matrix

    result, doc = matrix(args.versions.split(","), state=args.state, out=args.out, only=args.only,
                         timeout_s=args.timeout, html=not args.no_html, install=not args.no_install,
                         junit_xml=args.junit_xml, summary_md=args.summary_md, blocked_exit=args.blocked_exit,
                         progress=None if out.json_mode else out.info, providers=args.providers.split(","),
                         model=args.model)
    for warning in doc["warnings"]:
        out.info(f"warning: {warning}")
    for v in doc["versions"]:
        reason = f"  ({v['reason']})" if v["status"] != "ran" else ""
        out.line(f"{v['version']:8} {v['provider']:5} {v['status']:11} {v['verdict'] or '—':8} "
                 + " ".join(f"{k}={w}" for k, w in v["notebooks"].items()) + reason)
    for c in doc["changes"]:
        moved = len(c["verdicts"]) + len(c["drift_added"]) + len(c["drift_removed"])
        out.line(f"{c['from']} → {c['to']} ({c['provider']}): {moved or 'no'} changes")
    out.line(f"matrix {result.verdict}; summary in {result.out_dir / 'matrix.md'} and {result.out_dir / 'matrix.json'}")
    out.emit(doc)
    return result.exit_code
