"""Receipts in shared storage (``--out s3://bucket/prefix``: any URL papermill's I/O handlers accept). Objects are
named by run id (one index object per run, ``index.d/<run id>.json``), so runners sharing a prefix never write the
same object: no locks. Reading back mirrors the objects into a temporary directory."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, PublishError, UsageError
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import load_index, parse_index, render_index_html
from hermes_nb.receipts.write import check_clean

INDEX_DIR = "index.d"


def is_url(location: str | Path | None) -> bool:
    """A storage URL rather than a local path (``file://`` counts as local)."""
    text = str(location or "")
    return "://" in text and not text.startswith("file://")


class RemoteStore:
    """A receipts prefix behind one of papermill's I/O handlers."""

    def __init__(self, url: str) -> None:
        if not is_url(url):
            raise UsageError(f"{url}: not a storage URL")
        self.url = url.rstrip("/")
        self.scheme = self.url.split("://", 1)[0]
        if self.scheme == "s3" and importlib.util.find_spec("boto3") is None:
            raise UsageError(f"{url}: s3:// needs boto3: pip install 'hermes-nb[s3]'")
        from papermill import iorw  # edge: ~0.4 s to import, and only a storage URL needs it

        self.iorw = iorw
        self.handler = self.iorw.papermill_io.get_handler(self.url + "/")
        if isinstance(self.handler, self.iorw.LocalHandler):
            raise UsageError(f"{url}: no papermill I/O handler for {self.scheme}:// "
                             "(s3, gs, abs, adl, hdfs, or one a package registers under `papermill.io`)")

    def _full(self, rel: str) -> str:
        return f"{self.url}/{rel.lstrip('/')}"

    def write_text(self, rel: str, text: str) -> str:
        self.handler.write(text, self._full(rel))
        return self._full(rel)

    def read_text(self, rel: str) -> str:
        """The object's exact text (S3 through ``S3.cat``: the handler's read drops a final newline)."""
        if self.scheme == "s3":
            return "".join(self.iorw.S3().cat(self._full(rel)))
        data = self.handler.read(self._full(rel))
        return data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else str(data)

    def list_files(self, rel: str = "") -> list[str]:
        """Every object under ``rel`` (recursive), as paths relative to the prefix."""
        base = self.url + "/"
        found: list[str] = []
        pending = [self._full(rel).rstrip("/") + "/" if rel else base]
        while pending:
            directory = pending.pop()
            for entry in map(str, self.handler.listdir(directory)):
                if entry.startswith(base) and entry != directory:
                    if entry.endswith("/"):
                        pending.append(entry)
                    else:
                        found.append(entry[len(base):])
        return sorted(found)

    def check(self) -> None:
        """A prefix that cannot be listed (a missing bucket, bad credentials) is a usage error."""
        try:
            self.handler.listdir(self.url + "/")
        except Exception as exc:  # noqa: BLE001 — every handler raises its own types
            raise UsageError(f"{self.url}: cannot list the prefix ({type(exc).__name__}: {exc})") from None

    def locate(self, path: str | Path, staging: Path) -> str:
        return self._full(Path(path).resolve().relative_to(staging.resolve()).as_posix())

    def publish(self, staging: Path, run_id: str | None = None, *, redactor: Redactor | None = None) -> list[str]:
        """Upload a staged run: its receipt files, then its index (a reader that sees it finds every receipt), then
        the page. ``run_id`` None: the staged index's."""
        staging = Path(staging)
        if run_id is None:
            entries = load_index(staging)["receipts"]
            if not entries:
                return []
            run_id = str(entries[0]["run_id"])
        uploaded: list[str] = []
        try:
            for path in sorted(p for p in staging.rglob("*") if p.is_file()):
                rel = path.relative_to(staging).as_posix()
                if rel not in ("index.json", "README.md", "index.html"):  # the page is rebuilt from every run
                    uploaded.append(self.write_text(rel, path.read_text(encoding="utf-8")))
            if (staging / "index.json").is_file():
                uploaded.append(self.write_text(f"{INDEX_DIR}/{run_id}.json",
                                                (staging / "index.json").read_text(encoding="utf-8")))
                uploaded.append(self.write_index_html(redactor=redactor))
        except Exception as exc:  # noqa: BLE001 — keep the evidence, say where, fail the command
            kept = Path(tempfile.mkdtemp(prefix=f"hermes-nb-unpublished-{run_id}-"))
            shutil.copytree(staging, kept, dirs_exist_ok=True)
            raise PublishError(f"{self.url}: publishing run {run_id} failed after {len(uploaded)} objects "
                               f"({type(exc).__name__}: {exc}); the receipts are kept in {kept}") from None
        return uploaded

    def write_index_html(self, *, redactor: Redactor | None = None) -> str:
        """``<prefix>/index.html`` from every run's index object (run ids sort by time)."""
        entries: list[Any] = []
        for rel in sorted(n for n in self.list_files(INDEX_DIR) if n.endswith(".json")):
            entries += parse_index(self.read_text(rel), self._full(rel))["receipts"]
        text = render_index_html({"receipts": entries}, chain=f"{INDEX_DIR}/")
        check_clean("index.html", text, redactor or Redactor())
        return self.write_text("index.html", text)


def index_documents(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every receipts index in a local directory, oldest first: ``index.json`` and ``index.d/*.json``."""
    directory = Path(directory)
    found = [(directory / "index.json", load_index(directory))] if (directory / "index.json").is_file() else []
    for path in sorted((directory / INDEX_DIR).glob("*.json")):
        found.append((path, parse_index(path.read_bytes(), str(path))))
    return found


@contextmanager
def mirrored(url: str, *, only_indexes: bool = False) -> Iterator[tuple[RemoteStore, Path]]:
    """A temporary local copy of a remote receipts prefix, or of its index objects."""
    store = RemoteStore(url)
    store.check()
    tmp = Path(tempfile.mkdtemp(prefix="hermes-nb-mirror-"))
    try:
        for rel in store.list_files(INDEX_DIR) if only_indexes else store.list_files():
            if ".." in Path(rel).parts:
                raise ArtifactError(f"{store.url}/{rel}: object name escapes the prefix")
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(store.read_text(rel), encoding="utf-8")
        yield store, tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
