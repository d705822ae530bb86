"""``receipts verify``: recompute every digest, check the index chains, re-scan every file for secrets (the digests
catch edits and accidents, not someone who recomputes them all); and the promotion gate: a manifest goes
``experimental → active`` only on a verified, passed ``e2e_smoke`` receipt of a ``live`` target, with a promotion
record appended to the smoke runbook; else :class:`PromotionRefused` names every reason and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.errors import ArtifactError, HermesError, PromotionRefused, UsageError
from hermes_nb.core.facts import E2E_SMOKE, MANIFEST_RELPATH, SMOKE_RUNBOOK_RELPATH
from hermes_nb.core.io import prove_writable, sha256_file, write_atomic
from hermes_nb.core.manifest import load_manifest, save_manifest
from hermes_nb.core.redaction import find_secrets
from hermes_nb.core.yamlio import read_text_file
from hermes_nb.receipts.index import INDEXED_FIELDS, LATER_FIELDS, entry_digest, load_index
from hermes_nb.receipts.store import INDEX_DIR, index_documents
from hermes_nb.receipts.write import SIDECAR_SUFFIX, receipt_digest


@dataclass
class VerifyReport:
    directory: str
    receipts: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files_scanned: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "ok": self.ok, "receipts": self.receipts,
                "problems": self.problems, "files_scanned": self.files_scanned}


def _secrets_in(path: Path, known: list[str]) -> list[str]:
    return [f"{path}: secret found: {what}"
            for what in find_secrets(path.read_bytes().decode("utf-8", errors="replace"), known)]


def scan_tree(directory: Path, secrets: Iterable[str] = (), *, skip: Iterable[Path] = ()) -> tuple[int, list[str]]:
    known, skipped = [s for s in secrets if s], set(skip)
    paths = sorted(p for p in Path(directory).rglob("*") if p.is_file() and not skipped & set(p.parents))
    return len(paths), [problem for path in paths for problem in _secrets_in(path, known)]


def sidecar_of(notebook: Path) -> Path:
    return notebook.with_name(notebook.stem + SIDECAR_SUFFIX)


def verify_receipt(notebook: Path, *, sidecar_sha256: str | None = None,
                   secrets: Iterable[str] = ()) -> tuple[dict[str, Any] | None, list[str]]:
    """(metadata.receipt, problems) of one receipt: sidecar digests, the receipt digest, its files' secrets."""
    notebook = Path(notebook)
    sidecar_path = sidecar_of(notebook)
    if not notebook.is_file():
        return None, [f"{notebook}: receipt notebook not found"]
    if not sidecar_path.is_file():
        return None, [f"{sidecar_path}: sidecar not found"]
    problems = []
    if sidecar_sha256 is not None and sha256_file(sidecar_path) != sidecar_sha256:
        problems.append(f"{sidecar_path}: sidecar digest does not match the index")
    try:
        sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        receipt = nbformat.reads(notebook.read_text(encoding="utf-8"), as_version=4).metadata.get("receipt")
    except (ValueError, AttributeError, KeyError, TypeError, nbformat.reader.NotJSONError,
            nbformat.ValidationError) as exc:  # damaged JSON, or JSON that is no notebook (fuzz-found)
        return None, [f"{notebook}: unreadable: {type(exc).__name__}: {str(exc)[:200]}"]
    if not isinstance(sidecar, Mapping):
        return None, [f"{sidecar_path}: unreadable: not a JSON object"]
    if not isinstance(receipt, Mapping):
        return None, [f"{notebook}: no metadata.receipt"]
    if receipt_digest(receipt) != sidecar.get("receipt_sha256"):
        problems.append(f"{notebook}: metadata.receipt digest does not match the sidecar")
    if receipt_digest(sidecar.get("receipt") or {}) != sidecar.get("receipt_sha256"):
        problems.append(f"{sidecar_path}: sidecar receipt does not match its digest")
    files = sidecar.get("files") or {}
    for rel, digest in files.items():
        path = notebook.parent / rel
        if not path.is_file():
            problems.append(f"{path}: listed in the sidecar but missing")
        elif sha256_file(path) != digest:
            problems.append(f"{path}: sha256 does not match the sidecar")
    known = [s for s in secrets if s]
    for rel in [notebook.name, sidecar_path.name, *files]:
        if (notebook.parent / rel).is_file():
            problems += _secrets_in(notebook.parent / rel, known)
    return dict(receipt), list(dict.fromkeys(problems))


def verify_receipts(directory: Path, *, secrets: Iterable[str] = ()) -> VerifyReport:
    directory = Path(directory)
    report = VerifyReport(str(directory))
    if not directory.is_dir():
        report.problems.append(f"{directory}: not a directory")
        return report
    try:  # index.json (a local directory) and/or index.d/<run id>.json (shared storage): each its own chain
        indexes = index_documents(directory)
    except ArtifactError as exc:
        report.problems.append(str(exc))
        return report
    versions = [d for d in sorted(directory.iterdir())
                if d.is_dir() and ((d / "index.json").is_file() or (d / INDEX_DIR).is_dir())]
    if not indexes and versions:
        return _verify_matrix(directory, versions, list(secrets), report)
    if not indexes:  # verifying nothing must not read as "verified"
        report.problems.append(f"{directory}: no index.json (not a receipts directory, or nothing was written)")
        indexes = [(directory / "index.json", load_index(directory))]
    known = list(secrets)
    indexed: set[Path] = set()
    for index_path, index in indexes:
        for position, entry in enumerate(index["receipts"]):
            if "prev_sha256" in entry and entry["prev_sha256"] != entry_digest(index["receipts"][:position]):
                report.problems.append(f"{index_path}: entry {position + 1} ({entry.get('path')}): "
                                       "chain broken (an earlier entry was changed, removed or reordered)")
            path = directory / str(entry.get("path", ""))
            indexed.add(path.resolve())
            receipt, problems = verify_receipt(path, sidecar_sha256=entry.get("sidecar_sha256"), secrets=known)
            if receipt is not None:
                problems += _entry_problems(path, entry, receipt)
            report.receipts.append({"path": entry.get("path"), "notebook": entry.get("notebook"),
                                    "verdict": entry.get("verdict"), "ok": not problems})
            report.problems.extend(problems)
    listed: set[Path] = set()
    for sidecar in directory.rglob("*" + SIDECAR_SUFFIX):
        nb_path = sidecar.with_name(sidecar.name.removesuffix(SIDECAR_SUFFIX) + ".ipynb")
        if nb_path.resolve() not in indexed:
            report.problems.append(f"{nb_path}: receipt not in index.json")
        listed |= {sidecar.resolve(), *((sidecar.parent / rel).resolve() for rel in _sidecar_files(sidecar))}
    for path in sorted(directory.rglob("*")):  # a receipt directory (DIR/<date>/<run id>/…) holds only its files
        if path.is_file() and len(path.relative_to(directory).parts) > 2 and path.resolve() not in listed:
            report.problems.append(f"{path}: not listed in any receipt sidecar")
    report.files_scanned, leaks = scan_tree(directory, known)
    report.problems.extend(p for p in leaks if p not in report.problems)
    return report


def _entry_problems(path: Path, entry: Mapping[str, Any], receipt: Mapping[str, Any]) -> list[str]:
    problems = [f"{path}: metadata.receipt digest does not match the index"] \
        if receipt_digest(receipt) != entry.get("receipt_sha256") else []
    problems += [f"{path}: index says {key} {entry.get(key)!r}, the receipt says {receipt.get(key)!r}"
                 for key in (*INDEXED_FIELDS, *(k for k in LATER_FIELDS if k in entry))
                 if entry.get(key) != receipt.get(key)]
    sidecar = sidecar_of(Path(str(entry.get("path", "")))).as_posix()
    if entry.get("sidecar") != sidecar:
        problems.append(f"{path}: index names sidecar {entry.get('sidecar')!r}, expected {sidecar!r}")
    return problems


def _sidecar_files(sidecar: Path) -> list[str]:
    try:
        files = json.loads(sidecar.read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(rel) for rel in files] if isinstance(files, dict) else []


def _verify_matrix(directory: Path, parts: list[Path], known: list[str], report: VerifyReport) -> VerifyReport:
    for part in parts:
        sub = verify_receipts(part, secrets=known)
        report.receipts += [{**r, "path": f"{part.name}/{r['path']}"} for r in sub.receipts]
        report.problems += sub.problems
        report.files_scanned += sub.files_scanned
    for path in sorted(directory.rglob("*")):  # beside the versions: matrix.json and matrix.md, nothing deeper
        if path.is_file() and len(path.relative_to(directory).parts) > 1 and not set(parts) & set(path.parents):
            report.problems.append(f"{path}: in no receipts directory of the matrix")
    count, leaks = scan_tree(directory, known, skip=parts)
    report.files_scanned += count
    report.problems += leaks
    return report


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
