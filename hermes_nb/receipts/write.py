"""Writing one receipt: the executed notebook redacted and stamped, its HTML, artifact copies, the sidecar.

Layout under a receipts directory ``DIR``::

    DIR/index.json                       append-only chain of receipts (:mod:`hermes_nb.receipts.index`)
    DIR/README.md                        the same as a table, newest first
    DIR/<UTC date>/<run id>/<nb>.ipynb   the executed, redacted notebook; metadata.receipt
    DIR/<UTC date>/<run id>/<nb>.html    its HTML render (:mod:`hermes_nb.receipts.render`)
    DIR/<UTC date>/<run id>/<nb>.receipt.json   sidecar: receipt + sha256 of every file
    DIR/<UTC date>/<run id>/artifacts/<nb>/…    copies of the run's artifacts (e2e_smoke)

The sidecar holds the sha256 of the canonical JSON of ``metadata.receipt`` and
of every file of the receipt; :mod:`hermes_nb.receipts.verify` recomputes them.
Nothing is written before it is redacted and scanned (:func:`write_receipt`
raises :class:`SecretLeak` otherwise).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import ArtifactError, SecretLeak
from hermes_nb.core.io import json_digest, sha256_file, write_atomic
from hermes_nb.core.redaction import Redactor

if TYPE_CHECKING:  # nbformat is imported where it is used: the smoke runner starts its kernels first
    import nbformat

__all__ = [
    "RECEIPT_SCHEMA",
    "SIDECAR_SUFFIX",
    "receipt_digest",
    "redact_notebook",
    "HtmlRenderer",
    "ReceiptFiles",
    "write_receipt",
    "check_clean",
]

RECEIPT_SCHEMA = "hermes-nb.receipt.v1"
SIDECAR_SUFFIX = ".receipt.json"


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``metadata.receipt``."""
    return json_digest(dict(receipt))


def redact_notebook(nb: Any, redactor: Redactor) -> nbformat.NotebookNode:
    """Every string of the notebook (sources, outputs, metadata, papermill parameters) redacted."""
    import nbformat

    data = redactor.data(json.loads(nbformat.writes(nb)))
    return nbformat.reads(json.dumps(data), as_version=4)


class HtmlRenderer:
    """Renders receipts to HTML: our own fast renderer by default, nbconvert's HTMLExporter on request.

    ``engine="nbconvert"`` (template ``lab``/``classic``/``basic``) costs ~2 s per run; the default
    ``engine="hermes"`` (:mod:`hermes_nb.receipts.render`) costs milliseconds.
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
            from hermes_nb.receipts.render import render_html

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


def check_clean(label: str, text: str, redactor: Redactor) -> None:
    found = redactor.find(text)
    if found:
        raise SecretLeak(f"{label}: refusing to write: {', '.join(found)}")


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
    check_clean(f"{name}.ipynb", nb_text, redactor)
    html_text = renderer.render(clean) if renderer is not None else None
    if html_text is not None:
        check_clean(f"{name}.html", html_text, redactor)
    copies: dict[str, str] = {}
    for art_name, src in (artifacts or {}).items():
        if Path(art_name).name != art_name:
            raise ArtifactError(f"artifact name {art_name!r} must be a plain file name")
        copies[f"artifacts/{name}/{art_name}"] = redactor.text(Path(src).read_text(encoding="utf-8", errors="replace"))
        check_clean(f"artifact {art_name}", copies[f"artifacts/{name}/{art_name}"], redactor)

    documents = {f"{name}.ipynb": nb_text, **({f"{name}.html": html_text} if html_text is not None else {}), **copies}
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
    html_path = receipt_dir / f"{name}.html" if html_text is not None else None
    return ReceiptFiles(receipt_dir / f"{name}.ipynb", html_path, sidecar_path, digest, sha256_file(sidecar_path),
                        files)
