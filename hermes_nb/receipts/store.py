"""Receipts in shared storage: ``--out s3://bucket/prefix`` (any URL papermill's I/O handlers accept).

Teams with many runners keep evidence in one bucket. The smoke writes its receipts exactly as it
does locally, into a private staging directory, then :meth:`RemoteStore.publish` uploads every file
through papermill's own I/O registry (``papermill.iorw.papermill_io``: ``s3://`` with the
``hermes-nb[s3]`` extra, plus ``gs://``, ``abs://``, ``adl://``, ``hdfs://`` and handlers other
packages register under the ``papermill.io`` entry point)::

    <prefix>/<UTC date>/<run id>/<notebook>.ipynb|.html|.receipt.json|artifacts/…   as locally
    <prefix>/index.d/<run id>.json                                                  this run's index
    <prefix>/index.html                     every run's verdicts, rebuilt from all index.d objects

**One index object per run, create-only by construction.** Two runners writing into one prefix at
once never write the same object: receipt directories and index objects are named by run id
(``YYYYMMDDTHHMMSSZ-`` + 24 random bits), so there is no read-modify-write of a shared index and
nothing to lose to a race — no locks, no conditional writes, works on every store papermill can
write to. Each run's index is a hash chain of that run's receipts (``prev_sha256``, the same
format as a local ``index.json``); :func:`hermes_nb.receipts.verify.verify_receipts` checks every
chain and every receipt. What the per-run design cannot show (as the local chain cannot show its
newest entries cut off): a whole run deleted together with its index object — keep the bucket
versioned or object-locked for that.

``index.html`` is the one object every run rewrites: after its index object, a run lists every
``index.d/*.json`` and renders the page from all of them (links relative to the prefix, so they work
wherever the prefix is served from). Two runs finishing at the same moment may each miss the other's
run on the page; the next run's page has both, and the index objects (what ``receipts verify|list``
read) are never lost.

Reading back (``receipts verify|list URL``) mirrors the objects into a temporary directory and runs
the local checks there. S3 objects are read byte-exact with papermill's ``S3.cat`` (its
``S3Handler.read`` joins lines and drops a trailing newline, which would break every digest).
Endpoint for S3-compatible servers (MinIO, Ceph, …): ``AWS_ENDPOINT_URL`` (boto3 ≥ 1.28 reads it for
every client papermill makes; ``AWS_ENDPOINT_URL_S3`` for S3 only, or papermill's own
``BOTO3_ENDPOINT_URL`` for its resource). Errors name the URL, never a command-line flag.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, PublishError, UsageError
from hermes_nb.core.redaction import Redactor

__all__ = ["INDEX_DIR", "is_url", "RemoteStore", "open_store", "mirrored", "index_documents"]

#: the per-run index objects live under ``<prefix>/index.d/``
INDEX_DIR = "index.d"


def is_url(location: str | Path | None) -> bool:
    """A storage URL (``scheme://…``) rather than a local path (``file://`` counts as local)."""
    text = str(location or "")
    return "://" in text and not text.startswith("file://")


def _io() -> Any:
    from papermill.iorw import papermill_io

    return papermill_io


class RemoteStore:
    """A receipts prefix behind one of papermill's I/O handlers."""

    def __init__(self, url: str) -> None:
        from papermill.iorw import LocalHandler

        if not is_url(url):
            raise UsageError(f"{url}: not a storage URL")
        self.url = url.rstrip("/")
        self.scheme = self.url.split("://", 1)[0]
        if self.scheme == "s3":
            try:
                import boto3  # noqa: F401
            except ImportError:
                raise UsageError(f"{url}: s3:// needs boto3: pip install 'hermes-nb[s3]'") from None
        handler = _io().get_handler(self.url + "/")
        if isinstance(handler, LocalHandler):
            raise UsageError(f"{url}: no papermill I/O handler for {self.scheme}:// "
                             "(s3, gs, abs, adl, hdfs, or one a package registers under `papermill.io`)")
        self.handler = handler

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    # ------------------------------------------------------------------ raw I/O

    def _full(self, rel: str) -> str:
        return f"{self.url}/{rel.lstrip('/')}"

    def write_text(self, rel: str, text: str) -> str:
        target = self._full(rel)
        self.handler.write(text, target)
        return target

    def read_text(self, rel: str) -> str:
        """The object's exact text (S3: byte-exact through ``S3.cat``)."""
        full = self._full(rel)
        if self.scheme == "s3":
            from papermill.s3 import S3

            return "".join(S3().cat(full))
        data = self.handler.read(full)
        return data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else str(data)

    def list_files(self, rel: str = "") -> list[str]:
        """Every object under ``rel`` (recursive), as paths relative to the prefix."""
        base = self.url + "/"
        found: list[str] = []
        pending = [self._full(rel).rstrip("/") + "/" if rel else base]
        while pending:
            directory = pending.pop()
            for entry in self.handler.listdir(directory):
                entry = str(entry)
                if not entry.startswith(base):
                    continue
                if entry.endswith("/"):
                    if entry != directory:
                        pending.append(entry)
                else:
                    found.append(entry[len(base):])
        return sorted(found)

    def check(self) -> None:
        """Can we list the prefix? (a missing bucket or bad credentials: usage error before any notebook runs)"""
        try:
            self.handler.listdir(self.url + "/")
        except Exception as exc:  # noqa: BLE001 — every handler raises its own types
            raise UsageError(f"{self.url}: cannot list the prefix ({type(exc).__name__}: {exc})") from None

    # ------------------------------------------------------------------ receipts

    def locate(self, path: str | Path, staging: Path) -> str:
        """The URL a staged local file is published at."""
        return self._full(Path(path).resolve().relative_to(staging.resolve()).as_posix())

    def publish(self, staging: Path, run_id: str | None = None, *, redactor: Redactor | None = None) -> list[str]:
        """Upload a staged run: every receipt file, then its ``index.json`` as ``index.d/<run id>.json``, then
        ``index.html`` rebuilt from every run's index object.

        The index goes after the receipts, so a reader that sees a run's index finds all its receipts.
        ``run_id`` None: read it from the staged index (a run interrupted before it returned).
        """
        staging = Path(staging)
        if run_id is None:
            entries = _load_index_file(staging / "index.json")["receipts"] if (staging / "index.json").is_file() else []
            if not entries:
                return []
            run_id = str(entries[0]["run_id"])
        uploaded: list[str] = []
        try:
            for path in sorted(p for p in staging.rglob("*") if p.is_file()):
                rel = path.relative_to(staging).as_posix()
                if rel in ("index.json", "README.md", "index.html"):  # the page is rebuilt from every run below
                    continue
                uploaded.append(self.write_text(rel, path.read_text(encoding="utf-8")))
            index = staging / "index.json"
            if index.is_file():
                uploaded.append(self.write_text(f"{INDEX_DIR}/{run_id}.json", index.read_text(encoding="utf-8")))
                uploaded.append(self.write_index_html(redactor=redactor))
        except Exception as exc:  # noqa: BLE001 — keep the evidence, say where, fail the command
            kept = Path(tempfile.mkdtemp(prefix=f"hermes-nb-unpublished-{run_id}-"))
            shutil.copytree(staging, kept, dirs_exist_ok=True)
            raise PublishError(f"{self.url}: publishing run {run_id} failed after {len(uploaded)} objects "
                               f"({type(exc).__name__}: {exc}); the receipts are kept in {kept}") from None
        return uploaded

    def write_index_html(self, *, redactor: Redactor | None = None) -> str:
        """``<prefix>/index.html`` from every run's index object, oldest run first (run ids sort by time)."""
        from hermes_nb.receipts.index_html import render_index_html
        from hermes_nb.receipts.write import check_clean

        entries: list[Any] = []
        for rel in sorted(n for n in self.list_files(INDEX_DIR) if n.endswith(".json")):
            entries += _index_text(self.read_text(rel), self._full(rel))["receipts"]
        text = render_index_html({"receipts": entries}, chain=f"{INDEX_DIR}/")
        check_clean("index.html", text, redactor or Redactor())
        return self.write_text("index.html", text)

    def mirror(self, destination: Path, *, only_indexes: bool = False) -> int:
        """Copy the prefix's objects (or just the index objects) into ``destination``; how many."""
        names = self.list_files(INDEX_DIR) if only_indexes else self.list_files()
        for rel in names:
            target = destination / rel
            if ".." in Path(rel).parts:
                raise ArtifactError(f"{self._full(rel)}: object name escapes the prefix")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.read_text(rel), encoding="utf-8")
        return len(names)


def index_documents(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every receipts index in a local directory: ``index.json`` (the locked, appended chain of a local
    directory) and ``index.d/*.json`` (one per run, from shared storage), oldest run first."""
    from hermes_nb.receipts.index import load_index

    directory = Path(directory)
    found: list[tuple[Path, dict[str, Any]]] = []
    if (directory / "index.json").is_file():
        found.append((directory / "index.json", load_index(directory)))
    for path in sorted((directory / INDEX_DIR).glob("*.json")) if (directory / INDEX_DIR).is_dir() else ():
        found.append((path, _load_index_file(path)))
    return found


def _load_index_file(path: Path) -> dict[str, Any]:
    return _index_text(path.read_text(encoding="utf-8"), str(path))


def _index_text(text: str, where: str) -> dict[str, Any]:
    import json

    from hermes_nb.receipts.index import INDEX_SCHEMA

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ArtifactError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("receipts"), list) or data.get("schema") != INDEX_SCHEMA:
        raise ArtifactError(f"{where}: not a receipts index")
    return data


def open_store(location: str) -> RemoteStore:
    return RemoteStore(location)


@contextmanager
def mirrored(url: str, *, only_indexes: bool = False) -> Iterator[tuple[RemoteStore, Path]]:
    """A temporary local copy of a remote receipts prefix (removed afterwards)."""
    store = open_store(url)
    store.check()
    tmp = Path(tempfile.mkdtemp(prefix="hermes-nb-mirror-"))
    try:
        store.mirror(tmp, only_indexes=only_indexes)
        yield store, tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
