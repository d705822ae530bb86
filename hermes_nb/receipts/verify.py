"""``receipts verify``: recompute every digest, check the index chain, re-scan every file for secrets.

A ``matrix --out`` directory (one receipts directory per version, ``matrix.json``/``.md`` beside them, no index
at the top) is verified as the set of its receipts directories, and what lies beside them is scanned too.

The digests are not signatures: they catch edits and accidents, not someone
who recomputes them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.io import sha256_file
from hermes_nb.core.redaction import find_secrets
from hermes_nb.receipts.index import INDEXED_FIELDS, LATER_FIELDS, entry_digest, load_index
from hermes_nb.receipts.store import INDEX_DIR, index_documents
from hermes_nb.receipts.write import SIDECAR_SUFFIX, receipt_digest

__all__ = ["VerifyReport", "verify_receipt", "verify_receipts", "scan_tree"]


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


def scan_tree(directory: Path, secrets: Iterable[str] = (), *, skip: Iterable[Path] = ()) -> tuple[int, list[str]]:
    """Scan every file under ``directory`` (but those under ``skip``) for known secrets and secret shapes."""
    known = [s for s in secrets if s]
    skipped = set(skip)
    count, problems = 0, []
    for path in sorted(p for p in Path(directory).rglob("*") if p.is_file() and not skipped & set(p.parents)):
        count += 1
        text = path.read_bytes().decode("utf-8", errors="replace")
        for what in find_secrets(text, known):
            problems.append(f"{path}: secret found: {what}")
    return count, problems


def verify_receipt(notebook: Path, *, sidecar_sha256: str | None = None,
                   secrets: Iterable[str] = ()) -> tuple[dict[str, Any] | None, list[str]]:
    """Check one receipt: sidecar digests, the receipt digest, its files' secrets. Returns (receipt, problems)."""
    import nbformat

    notebook = Path(notebook)
    problems: list[str] = []
    name = notebook.name[: -len(".ipynb")] if notebook.name.endswith(".ipynb") else notebook.stem
    sidecar_path = notebook.with_name(name + SIDECAR_SUFFIX)
    if not notebook.is_file():
        return None, [f"{notebook}: receipt notebook not found"]
    if not sidecar_path.is_file():
        return None, [f"{sidecar_path}: sidecar not found"]
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
    for rel, digest in (sidecar.get("files") or {}).items():
        path = notebook.parent / rel
        if not path.is_file():
            problems.append(f"{path}: listed in the sidecar but missing")
        elif sha256_file(path) != digest:
            problems.append(f"{path}: sha256 does not match the sidecar")
    known = [s for s in secrets if s]
    for rel in [notebook.name, sidecar_path.name, *(sidecar.get("files") or {})]:
        path = notebook.parent / rel
        if path.is_file():
            for what in find_secrets(path.read_bytes().decode("utf-8", errors="replace"), known):
                problems.append(f"{path}: secret found: {what}")
    return dict(receipt), sorted(set(problems), key=problems.index)


def _entry_problems(path: Path, entry: Mapping[str, Any], receipt: Mapping[str, Any]) -> list[str]:
    keys = [*INDEXED_FIELDS, *(key for key in LATER_FIELDS if key in entry)]
    problems = [f"{path}: index says {key} {entry.get(key)!r}, the receipt says {receipt.get(key)!r}"
                for key in keys if entry.get(key) != receipt.get(key)]
    name = path.name[: -len(".ipynb")] if path.name.endswith(".ipynb") else path.stem
    sidecar = Path(str(entry.get("path", ""))).with_name(name + SIDECAR_SUFFIX).as_posix()
    if entry.get("sidecar") != sidecar:
        problems.append(f"{path}: index names sidecar {entry.get('sidecar')!r}, expected {sidecar!r}")
    return problems


def _sidecar_files(sidecar: Path) -> list[str]:
    try:
        files = json.loads(sidecar.read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(rel) for rel in files] if isinstance(files, dict) else []


def verify_receipts(directory: Path, *, secrets: Iterable[str] = ()) -> VerifyReport:
    """Recompute every digest of every indexed receipt and re-scan the whole tree for secrets."""
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
    if not indexes and (parts := _receipts_directories(directory)):  # a matrix: one receipts directory per version
        return _verify_matrix(directory, parts, list(secrets), report)
    if not indexes:  # verifying nothing must not read as "verified"
        report.problems.append(f"{directory}: no index.json (not a receipts directory, or nothing was written)")
        indexes = [(directory / "index.json", load_index(directory))]
    known = list(secrets)
    indexed: set[Path] = set()
    for index_path, index in indexes:
        _verify_chain(directory, index_path, index, known, indexed, report)
    _verify_tree(directory, known, indexed, report)
    return report


def _verify_chain(directory: Path, index_path: Path, index: Mapping[str, Any], known: list[str],
                  indexed: set[Path], report: VerifyReport) -> None:
    for position, entry in enumerate(index["receipts"]):
        if "prev_sha256" in entry and entry["prev_sha256"] != entry_digest(index["receipts"][:position]):
            report.problems.append(f"{index_path}: entry {position + 1} ({entry.get('path')}): "
                                   "chain broken (an earlier entry was changed, removed or reordered)")
        path = directory / str(entry.get("path", ""))
        indexed.add(path.resolve())
        receipt, problems = verify_receipt(path, sidecar_sha256=entry.get("sidecar_sha256"), secrets=known)
        if receipt is not None and receipt_digest(receipt) != entry.get("receipt_sha256"):
            problems.append(f"{path}: metadata.receipt digest does not match the index")
        if receipt is not None:
            problems.extend(_entry_problems(path, entry, receipt))
        report.receipts.append({"path": entry.get("path"), "notebook": entry.get("notebook"),
                                "verdict": entry.get("verdict"), "ok": not problems})
        report.problems.extend(problems)


def _verify_tree(directory: Path, known: list[str], indexed: set[Path], report: VerifyReport) -> None:
    listed: set[Path] = set()
    for sidecar in directory.rglob("*" + SIDECAR_SUFFIX):
        nb_path = sidecar.with_name(sidecar.name[: -len(SIDECAR_SUFFIX)] + ".ipynb")
        if nb_path.resolve() not in indexed:
            report.problems.append(f"{nb_path}: receipt not in index.json")
        listed.add(sidecar.resolve())
        listed.update((sidecar.parent / rel).resolve() for rel in _sidecar_files(sidecar))
    for path in sorted(directory.rglob("*")):
        # a receipt directory (DIR/<date>/<run id>/…) holds only what its sidecars list
        if path.is_file() and len(path.relative_to(directory).parts) > 2 and path.resolve() not in listed:
            report.problems.append(f"{path}: not listed in any receipt sidecar")
    report.files_scanned, leaks = scan_tree(directory, known)
    report.problems.extend(p for p in leaks if p not in report.problems)


def _receipts_directories(directory: Path) -> list[Path]:
    """The directories right under ``directory`` that hold a receipts index (a matrix's versions)."""
    return [d for d in sorted(directory.iterdir())
            if d.is_dir() and ((d / "index.json").is_file() or (d / INDEX_DIR).is_dir())]


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
