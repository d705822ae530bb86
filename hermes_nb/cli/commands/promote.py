"""Promote the adapter manifest from experimental to active on evidence: only a verified, passed e2e_smoke
receipt against a live proxy promotes; anything else is refused with the reason (exit 1). Missing files or a
bad manifest: exit 2."""

import os
from pathlib import Path

from pydantic import Field

from hermes_nb.cli.app import Output
from hermes_nb.core.facts import MANIFEST_RELPATH, SMOKE_RUNBOOK_RELPATH, env_secrets
from hermes_nb.core.spec import Spec
from hermes_nb.receipts.verify import promote

HELP = "promote the manifest to active on a live e2e receipt"


class SPEC(Spec):
    receipt: str = Field(description="an e2e_smoke receipt notebook (.ipynb)")
    manifest: str = Field(str(MANIFEST_RELPATH), description="adapter manifest")
    runbook: str = Field(str(SMOKE_RUNBOOK_RELPATH), description="where the promotion record is appended")


def handle(spec: SPEC, out: Output) -> int:
    result = promote(Path(spec.receipt), manifest=Path(spec.manifest), runbook=Path(spec.runbook),
                     secrets=env_secrets(os.environ))
    out.line(f"[PROMOTED] {result.manifest}: experimental → active\n  receipt: {result.receipt} "
             f"(sha256 {result.receipt_sha256})\n  record appended to {result.runbook}")
    out.emit(result.to_dict())
    return 0
