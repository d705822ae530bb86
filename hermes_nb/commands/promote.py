"""``hermes-nb promote --receipt PATH [--manifest M] [--runbook R]``: experimental → active on evidence.

Only a verified, passed e2e_smoke receipt against a live proxy promotes; anything
else is refused with the reason (exit 1). Missing files or a bad manifest: exit 2.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

#: = hermes_nb.promote.DEFAULT_MANIFEST / DEFAULT_RUNBOOK (literal: building --help imports nothing heavy)
DEFAULT_MANIFEST = Path(".harness/adapters/hermes-proxy.yaml")
DEFAULT_RUNBOOK = Path("runbooks/hermes-proxy-smoke.md")


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("promote", parents=[parent], help="promote the manifest to active on a live e2e receipt")
    p.add_argument("--receipt", required=True, metavar="PATH", help="an e2e_smoke receipt notebook (.ipynb)")
    p.add_argument("--manifest", default=str(DEFAULT_MANIFEST), metavar="PATH",
                   help=f"adapter manifest (default {DEFAULT_MANIFEST})")
    p.add_argument("--runbook", default=str(DEFAULT_RUNBOOK), metavar="PATH",
                   help=f"where the promotion record is appended (default {DEFAULT_RUNBOOK})")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Any) -> int:
    from ..promote import promote

    secrets = [s for s in (os.environ.get("HERMES_NB_AUTH_TOKEN"),) if s]
    result = promote(Path(args.receipt), manifest=Path(args.manifest), runbook=Path(args.runbook), secrets=secrets)
    out.line(f"[PROMOTED] {result.manifest}: experimental → active")
    out.line(f"  receipt: {result.receipt} (sha256 {result.receipt_sha256})")
    out.line(f"  record appended to {result.runbook}")
    out.emit(result.to_dict())
    return 0
