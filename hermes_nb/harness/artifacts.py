"""UH's run artifact tree (uh-contract §3), written safely.

::

    <root>/.harness/missions/<dir>/  latest.json  runtime-result.yaml  runs/index.json
        runs/<run_id>/  prompt.md  runtime-session.yaml  events.ndjson  runtime.stdout.log
                        runtime.stderr.log  diff.patch  runtime-result.yaml  runtime-final.txt
    <root>/.harness/audit/events.ndjson

Every path is checked before anything is written: it must stay inside the
mission directory (or ``.harness/audit``) and no component below ``root``
may be a symlink; files are opened with ``O_NOFOLLOW``. Violations raise
:class:`~hermes_nb.core.errors.ArtifactError` (CLI exit 2). JSON is 2-space
indented without a final newline; times are ISO-8601 UTC with ms and ``Z``.
The documents themselves are built from UH's models in :mod:`hermes_nb.harness.documents`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Any

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import AUDIT_RELPATH, MISSIONS_RELPATH
from hermes_nb.core.io import iso_now, new_run_id, validate_run_id, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.yamlio import dump_yaml
from hermes_nb.harness import documents

__all__ = ["MISSION_DIR_RE", "dump_json", "refuse_symlinks", "MissionArtifacts"]

MISSION_DIR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def dump_json(obj: Any) -> str:
    """2-space indent, no final newline (UH's format)."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def _surely_clean(line: str, redactor: Redactor) -> bool:
    """True when the JSON text ``line`` cannot hold a secret, so redacting each of its strings changes nothing.

    A string inside the document appears verbatim in its JSON text (``ensure_ascii=False``) unless it
    holds a character JSON escapes; so a known secret without such characters is in some string only if
    it is in the line, and no shape matches where its ``present`` test fails on the line. Anything else
    (a hit, a secret with ``"``, ``\\`` or a control character, a shape without a ``present`` test)
    is not surely clean: the caller redacts the document string by string.
    """
    for secret in redactor.secrets:
        if secret in line or '"' in secret or "\\" in secret or not secret.isprintable():
            return False
    return not any(shape.present is None or shape.present(line) for shape in redactor.shapes)


def _write_pieces(handle: Any, text: str, piece: int = 1 << 20) -> None:
    """Write ``text`` a megabyte of characters at a time: a big prompt is never encoded whole a second time."""
    if len(text) <= piece:
        handle.write(text)
        return
    for start in range(0, len(text), piece):
        handle.write(text[start:start + piece])


def refuse_symlinks(root: Path, path: Path) -> None:
    """Raise :class:`ArtifactError` if any component of ``path`` below ``root`` is a symlink."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise ArtifactError(f"refusing to write through symlink {current}")


class MissionArtifacts:
    """Safe writer for one mission directory under ``<root>/.harness/missions/``."""

    def __init__(self, root: str | Path, mission_dir: str, *, redactor: Redactor | None = None) -> None:
        if not isinstance(mission_dir, str) or not MISSION_DIR_RE.match(mission_dir) or mission_dir in (".", ".."):
            raise ArtifactError(f"mission directory name {mission_dir!r} is not a safe path component "
                                f"(use an id matching {MISSION_DIR_RE.pattern} or put the mission at "
                                ".harness/missions/<dir>/mission.yaml)")
        root_path = Path(root)
        try:
            self.root = root_path.resolve(strict=True)
        except FileNotFoundError:
            raise ArtifactError(f"root {root_path} does not exist") from None
        except OSError as exc:
            raise ArtifactError(f"root {root_path}: {exc.strerror}") from None
        if not self.root.is_dir():
            raise ArtifactError(f"root {self.root} is not a directory")
        self.mission_dir = self.root / MISSIONS_RELPATH / mission_dir
        self.redactor = redactor or Redactor()

    # ---------------------------------------------------------------- path safety

    def _check(self, path: Path, *, inside: Path) -> Path:
        """Refuse a path outside ``inside`` or through a symlink below ``root``."""
        path = Path(os.path.normpath(path))
        try:
            rel = path.relative_to(inside)
        except ValueError:
            raise ArtifactError(f"artifact path {path} escapes {inside}") from None
        if ".." in rel.parts:
            raise ArtifactError(f"artifact path {path} escapes {inside}")
        refuse_symlinks(self.root, path)
        return path

    def path(self, *parts: str) -> Path:
        """A path inside the mission directory (checked)."""
        return self._check(self.mission_dir.joinpath(*parts), inside=self.mission_dir)

    def run_dir(self, run_id: str) -> Path:
        return self.path("runs", validate_run_id(run_id))

    def dry_run_dir(self, run_id: str) -> Path:
        """Where a dry run writes: outside ``runs/``, whose every directory UH expects in ``runs/index.json``
        (its drift checker flags the others as orphans, and its strict index has no ``planned`` status)."""
        return self.path("dry-runs", validate_run_id(run_id))

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def claim_run_id(self, run_id: str, *, explicit: bool) -> str:
        """Create the run directory exclusively and return its id: two runs never share one.

        ``preflight`` saw the directory absent, but a concurrent run may have drawn the same generated id
        (same second, same 6 hex digits): a generated id that is taken is drawn again; an explicit one is
        an error.
        """
        for _ in range(64):
            run_dir = self.run_dir(run_id)
            self._mkdirs(run_dir.parent)
            try:
                run_dir.mkdir()
                return run_id
            except FileExistsError:
                if explicit:
                    raise ArtifactError(f"run directory {run_dir} already exists (choose another --run-id)") from None
                run_id = new_run_id()
            except OSError as exc:
                raise ArtifactError(f"cannot create {run_dir}: {exc.strerror}") from None
        raise ArtifactError(f"no free run id under {self.path('runs')}")

    def preflight(self, run_id: str) -> None:
        """Everything that can be checked before writing: safe paths, writable root, fresh run dir."""
        run_dir = self.run_dir(run_id)
        for name in ("latest.json", "runtime-result.yaml"):
            self.path(name)
        self.path("runs", "index.json")
        self._check(self.root / AUDIT_RELPATH / "events.ndjson", inside=self.root / AUDIT_RELPATH)
        self.read_index()  # a corrupt index fails now, before anything is written
        if run_dir.exists():
            raise ArtifactError(f"run directory {run_dir} already exists (choose another --run-id)")
        existing = self.root
        for part in run_dir.relative_to(self.root).parts:
            if not (existing / part).exists():
                break
            existing = existing / part
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise ArtifactError(f"cannot write under {existing}: not writable")
        try:  # a real probe too: root ignores permission bits, read-only mounts do not
            with tempfile.TemporaryFile(dir=existing, prefix=".hermes-nb-probe-"):
                pass
        except OSError as exc:
            raise ArtifactError(f"cannot write under {existing}: {exc.strerror or exc}") from None

    def _mkdirs(self, directory: Path) -> None:
        current = self.root
        for part in directory.relative_to(self.root).parts:
            current = current / part
            if current.is_symlink():
                raise ArtifactError(f"refusing to write through symlink {current}")
            try:
                current.mkdir(exist_ok=True)
            except OSError as exc:
                raise ArtifactError(f"cannot create {current}: {exc.strerror}") from None

    # ---------------------------------------------------------------- raw writes

    def open(self, path: Path, mode: str = "a") -> IO[str]:
        """Open a checked path for text writing without following a final symlink."""
        self._mkdirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | _O_NOFOLLOW | (os.O_APPEND if mode == "a" else os.O_TRUNC)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArtifactError(f"refusing to write through symlink {path}") from None
            raise ArtifactError(f"cannot write {path}: {exc.strerror}") from None
        return os.fdopen(fd, mode, encoding="utf-8", newline="")

    def write_text(self, path: Path, text: str, *, atomic: bool = False) -> Path:
        text = self.redactor.text(text)
        if not atomic:
            with self.open(path, "w") as fh:
                _write_pieces(fh, text)
            return path
        self._mkdirs(path.parent)  # refusing symlinks on the way; the document replaces a final one, never follows it
        if path.is_symlink():
            raise ArtifactError(f"refusing to write through symlink {path}")
        return write_atomic(path, text)

    def write_bytes(self, path: Path, data: bytes) -> Path:
        self._mkdirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_NOFOLLOW
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise ArtifactError(f"cannot write {path}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return path

    def write_line(self, handle: IO[str], obj: dict[str, Any]) -> None:
        """One redacted NDJSON line on an open handle, flushed."""
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if not _surely_clean(line, self.redactor):  # else: the line as it is (one event per delta: P5)
            line = json.dumps(self.redactor.data(obj), ensure_ascii=False, separators=(",", ":"))
        handle.write(line + "\n")
        handle.flush()

    def append_line(self, path: Path, obj: dict[str, Any]) -> None:
        """One NDJSON line appended to ``path``, flushed."""
        with self.open(path, "a") as fh:
            self.write_line(fh, obj)

    # ---------------------------------------------------------------- documents

    def write_json(self, path: Path, obj: Any, *, atomic: bool = True) -> Path:
        return self.write_text(path, dump_json(self.redactor.data(obj)), atomic=atomic)

    def write_yaml(self, path: Path, obj: Any) -> Path:
        return self.write_text(path, dump_yaml(self.redactor.data(obj)), atomic=True)

    def set_latest(self, run_id: str, started_at: str, status: str, finished_at: str | None = None) -> None:
        self.write_json(self.path("latest.json"), documents.latest_run(run_id, started_at, status, finished_at))

    def read_index(self) -> dict[str, Any]:
        path = self.path("runs", "index.json")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"schema_version": "uh.runs-index.v0", "runs": []}
        except (OSError, ValueError) as exc:
            raise ArtifactError(f"{path}: unreadable runs index ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            raise ArtifactError(f"{path}: not a uh.runs-index.v0 document")
        return data

    def update_index(self, run_id: str, **fields: Any) -> None:
        """Insert or update the entry of ``run_id`` in place, under a lock (concurrent runs of one mission).

        The lock is on the ``runs/`` directory itself, so UH's tree gets no extra lock file.
        """
        runs = self.path("runs")
        self._mkdirs(runs)
        try:
            fd = os.open(runs, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW)
        except OSError as exc:
            raise ArtifactError(f"cannot open {runs}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            index = self.read_index()
            runs_list = index["runs"]
            for position, entry in enumerate(runs_list):
                if isinstance(entry, dict) and entry.get("run_id") == run_id:
                    runs_list[position] = documents.index_entry({**entry, **fields})
                    break
            else:
                runs_list.append(documents.index_entry({"run_id": run_id, **fields}))
            self.write_json(self.path("runs", "index.json"), index)
        finally:
            os.close(fd)  # releases the lock

    def audit(self, event: str, payload: dict[str, Any]) -> None:
        path = self._check(self.root / AUDIT_RELPATH / "events.ndjson", inside=self.root / AUDIT_RELPATH)
        self.append_line(path, {"type": event, "timestamp": iso_now(), **payload})
