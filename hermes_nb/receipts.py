"""Receipt notebooks as evidence: metadata, redaction, digests, sidecars, the index, verify.

Layout under a receipts directory ``DIR``::

    DIR/index.json                       append-only list of receipts (hermes-nb.receipts-index.v1)
    DIR/README.md                        the same as a table, newest first
    DIR/<UTC date>/<run id>/<nb>.ipynb   the executed, redacted notebook; metadata.receipt
    DIR/<UTC date>/<run id>/<nb>.html    its HTML render
    DIR/<UTC date>/<run id>/<nb>.receipt.json   sidecar: receipt + sha256 of every file
    DIR/<UTC date>/<run id>/artifacts/<nb>/…    copies of the run's artifacts (e2e_smoke)

Tamper evidence: the sidecar holds the sha256 of the canonical JSON of
``metadata.receipt`` and of every file of the receipt; the index holds the
sidecar's sha256 and the receipt's key fields, and each index entry holds the
sha256 of the entry before it (``prev_sha256``: removing, editing or
reordering an earlier entry breaks the chain; cutting the newest entries off
does not — git history of a committed receipts dir covers that).
:func:`verify_receipts` recomputes all of them and re-scans every file for
secrets. The digests are not signatures: they catch edits and accidents, not
someone who recomputes them all. Nothing is written before it is redacted
and scanned (:func:`write_receipt` raises :class:`SecretLeak` otherwise).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ArtifactError, SecretLeak
from .nbkit import sha256_bytes, sha256_file
from .redact import Redactor, find_secrets

if TYPE_CHECKING:  # nbformat is imported where it is used: the smoke runner starts its kernels first
    import nbformat

__all__ = [
    "RECEIPT_SCHEMA",
    "INDEX_SCHEMA",
    "canonical_json",
    "receipt_digest",
    "redact_notebook",
    "HtmlRenderer",
    "ReceiptFiles",
    "write_receipt",
    "append_index",
    "load_index",
    "render_readme",
    "VerifyReport",
    "verify_receipt",
    "verify_receipts",
    "scan_tree",
]

RECEIPT_SCHEMA = "hermes-nb.receipt.v1"
INDEX_SCHEMA = "hermes-nb.receipts-index.v1"
SIDECAR_SUFFIX = ".receipt.json"
_INDEX_LOCK = threading.Lock()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``metadata.receipt``."""
    return sha256_bytes(canonical_json(dict(receipt)).encode("utf-8"))


def redact_notebook(nb: Any, redactor: Redactor) -> nbformat.NotebookNode:
    """Every string of the notebook (sources, outputs, metadata, papermill parameters) redacted."""
    import nbformat

    data = redactor.data(json.loads(nbformat.writes(nb)))
    return nbformat.reads(json.dumps(data), as_version=4)


class HtmlRenderer:
    """Renders receipts to HTML: our own fast renderer by default, nbconvert's HTMLExporter on request.

    ``engine="nbconvert"`` (template ``lab``/``classic``/``basic``) costs ~2 s per run; the default
    ``engine="hermes"`` (:mod:`hermes_nb.receipt_html`) costs milliseconds.
    """

    def __init__(self, engine: str = "hermes", template_name: str = "lab") -> None:
        if engine not in ("hermes", "nbconvert"):
            raise ValueError(f"unknown HTML engine {engine!r}")
        self.engine = engine
        self.template_name = template_name
        self._exporter: Any = None
        self._lock = threading.Lock()

    def render(self, nb: nbformat.NotebookNode) -> str:
        if self.engine == "hermes":
            from .receipt_html import render_html

            return render_html(nb)
        with self._lock:
            if self._exporter is None:
                from nbconvert import HTMLExporter

                self._exporter = HTMLExporter(template_name=self.template_name)
            body, _ = self._exporter.from_notebook_node(nb)
        return str(body)


@dataclass
class ReceiptFiles:
    notebook: Path
    html: Path | None
    sidecar: Path
    receipt_sha256: str
    sidecar_sha256: str
    files: dict[str, str] = field(default_factory=dict)


def _check_clean(label: str, text: str, redactor: Redactor) -> None:
    found = redactor.find(text)
    if found:
        raise SecretLeak(f"{label}: refusing to write: {', '.join(found)}")


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_receipt(nb: Any, receipt_dir: Path, name: str, receipt: Mapping[str, Any], *,
                  redactor: Redactor, renderer: HtmlRenderer | None = None,
                  artifacts: Mapping[str, Path] | None = None) -> ReceiptFiles:
    """Redact, stamp ``metadata.receipt``, scan, then write notebook, HTML, artifact copies and sidecar."""
    receipt_dir.mkdir(parents=True, exist_ok=True)
    clean = redact_notebook(nb, redactor)
    meta = redactor.data(dict(receipt))
    clean.metadata["receipt"] = meta
    import nbformat

    nb_text = nbformat.writes(clean)
    _check_clean(f"{name}.ipynb", nb_text, redactor)
    html_text = renderer.render(clean) if renderer is not None else None
    if html_text is not None:
        _check_clean(f"{name}.html", html_text, redactor)
    copies: dict[str, str] = {}
    for art_name, src in (artifacts or {}).items():
        if Path(art_name).name != art_name:
            raise ArtifactError(f"artifact name {art_name!r} must be a plain file name")
        copies[f"artifacts/{name}/{art_name}"] = redactor.text(Path(src).read_text(encoding="utf-8", errors="replace"))
        _check_clean(f"artifact {art_name}", copies[f"artifacts/{name}/{art_name}"], redactor)

    nb_path = receipt_dir / f"{name}.ipynb"
    _write_text(nb_path, nb_text)
    files = {nb_path.name: sha256_file(nb_path)}
    html_path = None
    if html_text is not None:
        html_path = receipt_dir / f"{name}.html"
        _write_text(html_path, html_text)
        files[html_path.name] = sha256_file(html_path)
    for rel, text in copies.items():
        target = receipt_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_text(target, text)
        files[rel] = sha256_file(target)
    digest = receipt_digest(meta)
    sidecar = {"schema": RECEIPT_SCHEMA, "receipt": meta, "receipt_sha256": digest, "files": files}
    sidecar_text = json.dumps(sidecar, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    _check_clean(f"{name}{SIDECAR_SUFFIX}", sidecar_text, redactor)
    sidecar_path = receipt_dir / f"{name}{SIDECAR_SUFFIX}"
    _write_text(sidecar_path, sidecar_text)
    return ReceiptFiles(nb_path, html_path, sidecar_path, digest, sha256_file(sidecar_path), files)


# --------------------------------------------------------------------------- index

def load_index(directory: Path) -> dict[str, Any]:
    path = Path(directory) / "index.json"
    if not path.is_file():
        return {"schema": INDEX_SCHEMA, "receipts": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ArtifactError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("receipts"), list):
        raise ArtifactError(f"{path}: not a receipts index")
    return data


def index_entry(directory: Path, files: ReceiptFiles, receipt: Mapping[str, Any]) -> dict[str, Any]:
    rel = files.notebook.relative_to(directory)
    return {
        "run_id": receipt.get("run_id"),
        "notebook": receipt.get("notebook"),
        "verdict": receipt.get("verdict"),
        "target_kind": receipt.get("target_kind"),
        "endpoint": receipt.get("endpoint"),
        "model": receipt.get("model"),
        "started_at": receipt.get("started_at"),
        "duration_s": receipt.get("duration_s"),
        "path": rel.as_posix(),
        "sidecar": files.sidecar.relative_to(directory).as_posix(),
        "sidecar_sha256": files.sidecar_sha256,
        "receipt_sha256": files.receipt_sha256,
    }


def append_index(directory: Path, entries: Iterable[Mapping[str, Any]], *, redactor: Redactor) -> Path:
    """Append entries to ``index.json`` and regenerate ``README.md`` (file lock + atomic rename)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # the lock is taken on the directory itself: no stray lock file in a tree meant to be committed
    with _INDEX_LOCK:
        fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            index = load_index(directory)
            for e in entries:  # each entry names the digest of the one before: a chain, rewrites show
                chained = {**redactor.data(dict(e)), "prev_sha256": _entry_digest(index["receipts"])}
                index["receipts"].append(chained)
            text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
            readme = render_readme(index)
            _check_clean("index.json", text, redactor)
            _write_text(directory / "index.json", text)
            _write_text(directory / "README.md", readme)
        finally:
            os.close(fd)  # releases the lock
    return directory / "index.json"


def _entry_digest(entries: list[Any]) -> str | None:
    """sha256 of the canonical JSON of the last entry (None for an empty index)."""
    return sha256_bytes(canonical_json(entries[-1]).encode("utf-8")) if entries else None


def render_readme(index: Mapping[str, Any]) -> str:
    lines = [
        "# Smoke receipts",
        "",
        "Written by `hermes-nb smoke`; check with `hermes-nb receipts verify <this dir>`.",
        "Newest first. Each receipt: the executed notebook, its HTML render and a JSON sidecar with digests.",
        "",
        "| started (UTC) | run id | notebook | verdict | target | model | endpoint | receipt |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in reversed(index.get("receipts", [])):
        path = str(e.get("path", ""))
        html = path[: -len(".ipynb")] + ".html" if path.endswith(".ipynb") else path
        cells = [e.get("started_at"), e.get("run_id"), e.get("notebook"), e.get("verdict"),
                 e.get("target_kind"), e.get("model"), e.get("endpoint")]
        text = " | ".join(str(c if c is not None else "—").replace("|", "\\|") for c in cells)
        lines.append(f"| {text} | [ipynb]({path}) · [html]({html}) |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- verify

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


def scan_tree(directory: Path, secrets: Iterable[str] = ()) -> tuple[int, list[str]]:
    """Scan every file under ``directory`` for known secrets and secret shapes."""
    known = [s for s in secrets if s]
    count, problems = 0, []
    for path in sorted(p for p in Path(directory).rglob("*") if p.is_file()):
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
    except (ValueError, nbformat.reader.NotJSONError) as exc:
        return None, [f"{notebook}: unreadable: {exc}"]
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


#: index fields that must equal the receipt's own (metadata.receipt) values
_INDEXED_FIELDS = ("run_id", "notebook", "verdict", "target_kind", "endpoint", "model", "started_at", "duration_s")


def _entry_problems(path: Path, entry: Mapping[str, Any], receipt: Mapping[str, Any]) -> list[str]:
    problems = [f"{path}: index says {key} {entry.get(key)!r}, the receipt says {receipt.get(key)!r}"
                for key in _INDEXED_FIELDS if entry.get(key) != receipt.get(key)]
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
    if not (directory / "index.json").is_file():  # verifying nothing must not read as "verified"
        report.problems.append(f"{directory}: no index.json (not a receipts directory, or nothing was written)")
    try:
        index = load_index(directory)
    except ArtifactError as exc:
        report.problems.append(str(exc))
        return report
    known = list(secrets)
    indexed: set[Path] = set()
    for position, entry in enumerate(index["receipts"]):
        if "prev_sha256" in entry and entry["prev_sha256"] != _entry_digest(index["receipts"][:position]):
            report.problems.append(f"{directory / 'index.json'}: entry {position + 1} ({entry.get('path')}): "
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
    return report
