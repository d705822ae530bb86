"""``hermes-nb matrix``: the smoke against the real proxy of several hermes-agent releases.

Each version runs in its own cached venv (``$HERMES_NB_CACHE_DIR``, default the user cache dir;
:mod:`hermes_nb.proxy.venvs`), writes one receipts run under ``<out>/<version>/``, and the matrix
summary goes to ``<out>/matrix.json`` and ``<out>/matrix.md`` (also appended to
``$GITHUB_STEP_SUMMARY`` when set). Versions that cannot run the state are listed as unsupported
(``live`` on 0.16.0 and 0.17.0).

Exit: 0 every version that ran passed, 1 any failed, 3 any blocked or unavailable (or none ran), 2 usage.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import UsageError
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH
from hermes_nb.core.providers import PROXY_PROVIDERS

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
    p.add_argument("--only", metavar="NAME", action="append", choices=NOTEBOOKS, help="run only this notebook (repeatable)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S", help="execution timeout per cell, seconds")
    p.add_argument("--no-html", action="store_true", help="skip the HTML renders")
    p.add_argument("--no-install", action="store_true",
                   help="use only cached (or adoptable) venvs; a missing version is unavailable")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Any) -> int:
    from hermes_nb.core.facts import env_secrets
    from hermes_nb.core.redaction import Redactor
    from hermes_nb.nbrun.matrix import matrix_markdown, rig_runner, run_matrix

    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    if not versions:
        raise UsageError("--versions: name at least one version")
    from hermes_nb.proxy.venvs import _check_version

    for v in versions:
        _check_version(v)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    unknown = [p for p in providers if p not in PROXY_PROVIDERS]
    if not providers or unknown:
        raise UsageError(f"--providers: {', '.join(unknown) or 'name at least one'}; choose from "
                         f"{', '.join(PROXY_PROVIDERS)}")
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout:g}")
    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    secrets = env_secrets(os.environ)
    say = None if out.json_mode else out.info
    out_dir = Path(args.out) if args.out else RECEIPTS_RELPATH / "matrix"
    runner = rig_runner(install=not args.no_install, only=args.only, timeout_s=args.timeout, html=not args.no_html,
                        secrets=secrets, progress=say, model=args.model)
    result = run_matrix(versions, state=args.state, out_dir=out_dir, runner=runner, progress=say,
                        redactor=Redactor(secrets), providers=providers)
    doc = result.to_dict()
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(matrix_markdown(Redactor(secrets).data(doc)))
    for v in doc["versions"]:
        out.line(f"{v['version']:8} {v['provider']:5} {v['status']:11} {v['verdict'] or '—':8} "
                 + " ".join(f"{k}={w}" for k, w in v["notebooks"].items()) + (f"  ({v['reason']})" if v["status"] != "ran" else ""))
    for c in doc["changes"]:
        moved = len(c["verdicts"]) + len(c["drift_added"]) + len(c["drift_removed"])
        out.line(f"{c['from']} → {c['to']} ({c['provider']}): {moved or 'no'} changes")
    out.line(f"matrix {result.verdict}; summary in {out_dir / 'matrix.md'} and {out_dir / 'matrix.json'}")
    out.emit(doc)
    return result.exit_code
