"""``hermes-nb promote --receipt PATH [--manifest M] [--runbook R]``: experimental → active on evidence.

Only a verified, passed e2e_smoke receipt against a live proxy promotes; anything
else is refused with the reason (exit 1). Missing files or a bad manifest: exit 2.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from hermes_nb.cli.output import Output
from hermes_nb.core.facts import MANIFEST_RELPATH, SMOKE_RUNBOOK_RELPATH, env_secrets


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("promote", parents=[parent], help="promote the manifest to active on a live e2e receipt")
    p.add_argument("--receipt", required=True, metavar="PATH", help="an e2e_smoke receipt notebook (.ipynb)")
    p.add_argument("--manifest", default=str(MANIFEST_RELPATH), metavar="PATH",
                   help=f"adapter manifest (default {MANIFEST_RELPATH})")
    p.add_argument("--runbook", default=str(SMOKE_RUNBOOK_RELPATH), metavar="PATH",
                   help=f"where the promotion record is appended (default {SMOKE_RUNBOOK_RELPATH})")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.receipts.promote import promote

    secrets = env_secrets(os.environ)
    result = promote(Path(args.receipt), manifest=Path(args.manifest), runbook=Path(args.runbook), secrets=secrets)
    out.line(f"[PROMOTED] {result.manifest}: experimental → active")
    out.line(f"  receipt: {result.receipt} (sha256 {result.receipt_sha256})")
    out.line(f"  record appended to {result.runbook}")
    out.emit(result.to_dict())
    return 0
