"""The receipts index: ``DIR/index.json`` (an append-only hash chain) and ``DIR/README.md``.

Each entry holds the receipt's key fields, its sidecar's sha256 and the sha256
of the entry before it (``prev_sha256``): removing, editing or reordering an
earlier entry breaks the chain; cutting the newest entries off does not — git
history of a committed receipts dir covers that. Appends take a lock on the
directory itself, so two smokes writing into one directory keep one chain.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.io import json_digest, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.write import ReceiptFiles, check_clean

__all__ = ["INDEX_SCHEMA", "INDEXED_FIELDS", "LATER_FIELDS", "load_index", "index_entry", "append_index",
           "entry_digest", "render_readme"]

INDEX_SCHEMA = "hermes-nb.receipts-index.v1"
#: index fields that must equal the receipt's own (metadata.receipt) values
INDEXED_FIELDS = ("run_id", "notebook", "verdict", "target_kind", "endpoint", "model", "started_at", "duration_s")
#: indexed too since issue 20 (an entry written before has none of them; one that has them must match); and
#: ``provider`` since issue 18
LATER_FIELDS = ("reason", "operator_action", "proxy_state", "provider")
_INDEX_LOCK = threading.Lock()


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
        **{key: receipt.get(key) for key in LATER_FIELDS},
        "path": rel.as_posix(),
        "html": files.html.relative_to(directory).as_posix() if files.html is not None else None,
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
                chained = {**redactor.data(dict(e)), "prev_sha256": entry_digest(index["receipts"])}
                index["receipts"].append(chained)
            text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
            readme = render_readme(index)
            check_clean("index.json", text, redactor)
            write_atomic(directory / "index.json", text)
            write_atomic(directory / "README.md", readme)
        finally:
            os.close(fd)  # releases the lock
    return directory / "index.json"


def entry_digest(entries: list[Any]) -> str | None:
    """sha256 of the canonical JSON of the last entry (None for an empty index)."""
    return json_digest(entries[-1]) if entries else None


def render_readme(index: Mapping[str, Any]) -> str:
    lines = [
        "# Smoke receipts",
        "",
        "Written by `hermes-nb smoke`; check with `hermes-nb receipts verify <this dir>`.",
        "Newest first. Each receipt: the executed notebook, its HTML render and a JSON sidecar with digests.",
        "",
        "| started (UTC) | run id | notebook | verdict | target | provider | model | endpoint | receipt |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in reversed(index.get("receipts", [])):
        path = str(e.get("path", ""))
        html = e["html"] if "html" in e else (path[: -len(".ipynb")] + ".html" if path.endswith(".ipynb") else path)
        cells = [e.get("started_at"), e.get("run_id"), e.get("notebook"), e.get("verdict"),
                 e.get("target_kind"), e.get("provider"), e.get("model"), e.get("endpoint")]
        text = " | ".join(str(c if c is not None else "—").replace("|", "\\|") for c in cells)
        lines.append(f"| {text} | [ipynb]({path})" + (f" · [html]({html})" if html else "") + " |")
    return "\n".join(lines) + "\n"
