"""One receipt under ``DIR/<UTC date>/<run id>/``: the executed notebook redacted and stamped (``metadata.receipt``),
its page, copies of the run's artifacts and the sidecar with the sha256 of ``metadata.receipt`` and every file.
Nothing is written before it is redacted and scanned (:class:`~hermes_nb.core.errors.SecretLeak` otherwise)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.errors import ArtifactError, SecretLeak
from hermes_nb.core.io import json_digest, sha256_file, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.render import render_html

RECEIPT_SCHEMA = "hermes-nb.receipt.v1"
SIDECAR_SUFFIX = ".receipt.json"


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``metadata.receipt``."""
    return json_digest(dict(receipt))


def redact_notebook(nb: Any, redactor: Redactor) -> nbformat.NotebookNode:
    """Every string of the notebook (sources, outputs, metadata, papermill parameters) redacted."""
    return nbformat.reads(json.dumps(redactor.data(json.loads(nbformat.writes(nb)))), as_version=4)


class HtmlRenderer:
    """A receipt's page: :func:`~hermes_nb.receipts.render.render_html` (milliseconds; nbconvert took ~2 s)."""

    render = staticmethod(render_html)


@dataclass
class ReceiptFiles:
    notebook: Path
    html: Path | None
    sidecar: Path
    receipt_sha256: str
    sidecar_sha256: str
    files: dict[str, str] = field(default_factory=dict)


def check_clean(label: str, text: str, redactor: Redactor) -> None:
    found = redactor.find(text)
    if found:
        raise SecretLeak(f"{label}: refusing to write: {', '.join(found)}")


def write_receipt(nb: Any, receipt_dir: Path, name: str, receipt: Mapping[str, Any], *,
                  redactor: Redactor, renderer: HtmlRenderer | None = None,
                  artifacts: Mapping[str, Path] | None = None) -> ReceiptFiles:
    """Redact, stamp ``metadata.receipt``, scan, then write the notebook, its page, artifact copies and sidecar."""
    clean = redact_notebook(nb, redactor)
    meta = redactor.data(dict(receipt))
    clean.metadata["receipt"] = meta
    documents = {f"{name}.ipynb": nbformat.writes(clean)}
    if renderer is not None:
        documents[f"{name}.html"] = renderer.render(clean)
    for art_name, src in (artifacts or {}).items():
        if Path(art_name).name != art_name:
            raise ArtifactError(f"artifact name {art_name!r} must be a plain file name")
        documents[f"artifacts/{name}/{art_name}"] = redactor.text(Path(src).read_text(encoding="utf-8",
                                                                                      errors="replace"))
    for rel, text in documents.items():
        check_clean(f"artifact {Path(rel).name}" if rel.startswith("artifacts/") else rel, text, redactor)
    receipt_dir.mkdir(parents=True, exist_ok=True)
    sidecar_path = receipt_dir / f"{name}{SIDECAR_SUFFIX}"
    files: dict[str, str] = {}
    try:  # a receipt is one unit: when one file cannot be written, the ones written before it go too
        for rel, text in documents.items():
            files[rel] = sha256_file(write_atomic(receipt_dir / rel, text))
        digest = receipt_digest(meta)
        sidecar = {"schema": RECEIPT_SCHEMA, "receipt": meta, "receipt_sha256": digest, "files": files}
        sidecar_text = json.dumps(sidecar, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        check_clean(f"{name}{SIDECAR_SUFFIX}", sidecar_text, redactor)
        write_atomic(sidecar_path, sidecar_text)
    except BaseException:
        for rel in files:
            with contextlib.suppress(OSError):
                (receipt_dir / rel).unlink()
        raise
    return ReceiptFiles(receipt_dir / f"{name}.ipynb", receipt_dir / f"{name}.html" if renderer else None,
                        sidecar_path, digest, sha256_file(sidecar_path), files)
