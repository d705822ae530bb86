"""The promotion gate: a manifest goes ``experimental → active`` only on a verified, passed ``e2e_smoke`` receipt
of a ``live`` target, and a promotion record is appended to the smoke runbook; else :class:`PromotionRefused`
(exit 1) names every reason and nothing is written."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, HermesError, PromotionRefused, UsageError
from hermes_nb.core.facts import E2E_SMOKE, MANIFEST_RELPATH, SMOKE_RUNBOOK_RELPATH
from hermes_nb.core.io import prove_writable, sha256_file, write_atomic
from hermes_nb.core.manifest import load_manifest, save_manifest
from hermes_nb.core.yamlio import read_text_file
from hermes_nb.receipts.index import load_index
from hermes_nb.receipts.verify import sidecar_of, verify_receipt
from hermes_nb.receipts.write import receipt_digest

RECORDS_HEADING = "## Promotion records"


@dataclass
class Promotion:
    manifest: Path
    runbook: Path
    receipt: Path
    receipt_sha256: str
    model: str | None
    endpoint: str | None
    promoted_at: str
    record: str

    def to_dict(self) -> dict[str, Any]:
        return {"promoted": True, "manifest": str(self.manifest), "runbook": str(self.runbook),
                "receipt": str(self.receipt), "receipt_sha256": self.receipt_sha256, "model": self.model,
                "endpoint": self.endpoint, "promoted_at": self.promoted_at, "status": "active"}


def check_receipt(receipt: Path, *, secrets: Iterable[str] = ()) -> tuple[dict[str, Any], list[str]]:
    """(metadata.receipt, reasons to refuse); a receipt in an indexed directory is checked against its entry too."""
    receipt = Path(receipt)
    if not receipt.is_file():
        raise UsageError(f"--receipt: {receipt} not found")
    meta, problems = verify_receipt(receipt, secrets=secrets)
    reasons = [("digest mismatch: " if "sha256" in p or "digest" in p else "") + p for p in problems]
    directory, sidecar = receipt.resolve().parent.parent.parent, sidecar_of(receipt)
    if (directory / "index.json").is_file():
        try:
            rel = receipt.resolve().relative_to(directory).as_posix()
            entry = next((e for e in load_index(directory)["receipts"] if e.get("path") == rel), None)
        except HermesError as exc:
            reasons.append(str(exc))
        else:
            if entry is None:
                reasons.append(f"{receipt}: not listed in {directory / 'index.json'}")
            elif sidecar.is_file() and sha256_file(sidecar) != entry.get("sidecar_sha256"):
                reasons.append(f"{sidecar}: digest mismatch with the index")
    if meta is None:
        return {}, reasons or [f"{receipt}: not a receipt"]
    if meta.get("notebook") != E2E_SMOKE:
        reasons.append(f"receipt is for {meta.get('notebook')!r}; only an e2e_smoke receipt can promote")
    kind = meta.get("target_kind")
    if kind in ("emulator", "rig"):
        reasons.append(f"target kind is {kind!r} ({'an emulator' if kind == 'emulator' else 'a rig'} receipt proves "
                       "nothing about a live proxy); a live receipt is required")
    elif kind != "live":
        reasons.append(f"target kind is {kind!r}; a live receipt is required")
    summary = meta.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    if kind == "live" and (meta.get("target_evidence") or summary.get("target") == "emulator"):
        reasons.append("the receipt claims target kind 'live' but records an emulator "
                       f"({meta.get('target_evidence') or 'the notebook started its own emulator'})")
    if meta.get("verdict") != "passed":
        reasons.append(f"verdict is {meta.get('verdict')!r} ({meta.get('reason')}); a passed receipt is required")
    return meta, reasons


def promote(receipt: Path, *, manifest: Path = MANIFEST_RELPATH, runbook: Path = SMOKE_RUNBOOK_RELPATH,
            secrets: Iterable[str] = (), now: datetime | None = None) -> Promotion:
    manifest, runbook = Path(manifest), Path(runbook)
    loaded = load_manifest(manifest)  # ConfigError (exit 2) when missing or invalid
    meta, reasons = check_receipt(Path(receipt), secrets=secrets)
    if loaded.status != "experimental":
        reasons.append(f"manifest {manifest} has status {loaded.status!r}; only experimental is promoted")
    if reasons:
        raise PromotionRefused(reasons)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = receipt_digest(meta)
    record = (f"- {stamp} — promoted `{manifest}` experimental → active on receipt `{receipt}` "
              f"(sha256 of metadata.receipt `{digest}`), model `{meta.get('model')}`, "
              f"endpoint `{meta.get('endpoint')}`, hermes-agent {meta.get('hermes_agent_version') or 'unknown'}, "
              f"run {meta.get('run_id')}\n")
    text = read_text_file(runbook, f"runbook {runbook}") if runbook.is_file() else "# Hermes proxy smoke\n"
    if RECORDS_HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{RECORDS_HEADING}\n\n"
    text = text if text.endswith("\n") else text + "\n"
    before = manifest.read_bytes()
    loaded.status = "active"
    try:  # an active manifest never stands without its record: the runbook is proven first, undone after
        prove_writable(runbook, "runbook")
        save_manifest(loaded, manifest, force=True)
        try:
            write_atomic(runbook, text + record, what="runbook")
        except ArtifactError:
            write_atomic(manifest, before, what="manifest")
            raise
    except (UsageError, ArtifactError) as exc:
        raise ArtifactError(f"{exc}; nothing was promoted") from None
    return Promotion(manifest, runbook, Path(receipt), digest, meta.get("model"), meta.get("endpoint"), stamp,
                     record)
