"""UH's run documents (uh-contract §3), each built through its model (a key UH does not know, or a ``null`` where
UH wants it absent, fails), and the writer of a mission directory, which refuses symlinks and paths outside it."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Any, Literal, get_args

from pydantic import BaseModel, Field

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import AUDIT_RELPATH, MISSIONS_RELPATH
from hermes_nb.core.io import iso_now, new_run_id, validate_run_id, write_atomic
from hermes_nb.core.model import StrictModel
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.yamlio import dump_yaml

RunStatus = Literal["running", "passed", "failed", "blocked", "cancelled", "timeout"]
_TS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
#: the default of a field UH allows absent but never null (pydantic validates an explicit null, not a default)
_ABSENT: Any = None


class LatestRun(StrictModel):
    schema_version: Literal["uh.latest-run.v0"]
    run_id: str
    started_at: str = Field(..., pattern=_TS)
    finished_at: str | None = Field(None, pattern=_TS)
    status: RunStatus


class RunsIndexEntry(StrictModel):
    run_id: str
    started_at: str = Field(..., pattern=_TS)
    finished_at: str = Field(_ABSENT, pattern=_TS)
    status: RunStatus
    runtime: str = _ABSENT
    archived: bool = _ABSENT
    replay_of: str = _ABSENT


class RunsIndex(StrictModel):
    schema_version: Literal["uh.runs-index.v0"]
    runs: list[RunsIndexEntry]


class RuntimeSession(StrictModel):
    schema_version: Literal["uh.runtime-session.v0"]
    mission_id: str
    runtime: str
    status: Literal["planned", "running", "succeeded", "failed"]
    command: str = _ABSENT
    args: list[str] = _ABSENT
    exit_code: int = _ABSENT
    started_at: str = Field(_ABSENT, pattern=_TS)
    finished_at: str = Field(_ABSENT, pattern=_TS)
    stdout_path: str = _ABSENT
    stderr_path: str = _ABSENT


class RuntimeResult(StrictModel):
    schema_version: Literal["uh.runtime-result.v0"]
    mission_id: str
    runtime: str
    status: Literal["passed", "failed", "blocked", "cancelled"]
    started_at: str = Field(..., pattern=_TS)
    finished_at: str = Field(..., pattern=_TS)
    exit_code: int = _ABSENT
    prompt_path: str
    stdout_path: str
    stderr_path: str
    diff_path: str = _ABSENT
    errors: list[str] = Field(default_factory=list)
    notes: list[str] = _ABSENT
    verdict: dict[str, Any] = _ABSENT  # {value, rationale, recorded_by, recorded_at}: UH records it, never us


class HermesRuntimeResult(RuntimeResult):
    """UH's result plus hermes_nb's documented extras (always present, null when unknown)."""

    warnings: list[str] = Field(default_factory=list)
    reason: str | None = None
    hint: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    retry_after_s: float | None = None
    usage: dict[str, Any] | None = None
    run_id: str | None = None
    #: the proxy's provider (``nous``, ``xai``): configured, or named by the proxy's own error
    provider: str | None = None


RESULT_EXTRA_FIELDS = tuple(sorted(set(HermesRuntimeResult.model_fields) - set(RuntimeResult.model_fields)))


def validate_result(doc: dict[str, Any]) -> HermesRuntimeResult:
    RuntimeResult.model_validate({k: v for k, v in doc.items() if k not in RESULT_EXTRA_FIELDS})
    return HermesRuntimeResult.model_validate(doc)


def uh_document(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """``fields`` as ``model``'s document: a None leaves its key out unless the field is nullable."""
    nullable = {k for k, f in model.model_fields.items() if type(None) in get_args(f.annotation)}
    present = {k: v for k, v in fields.items() if v is not None or k in nullable}
    return model.model_validate(present).model_dump(mode="json", exclude_unset=True)


def _surely_clean(line: str, redactor: Redactor) -> bool:
    """True when the JSON text ``line`` cannot hold a secret: redacting its strings can be skipped (P5)."""
    for secret in redactor.secrets:
        if secret in line or '"' in secret or "\\" in secret or not secret.isprintable():
            return False
    return not any(shape.present is None or shape.present(line) for shape in redactor.shapes)


def refuse_symlinks(root: Path, path: Path) -> None:
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise ArtifactError(f"refusing to write through symlink {current}")


class MissionArtifacts:

    def __init__(self, root: str | Path, mission_dir: str, *, redactor: Redactor | None = None) -> None:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", mission_dir) or mission_dir in (".", ".."):
            raise ArtifactError(f"mission directory name {mission_dir!r} is not a safe path component "
                                "(use an id matching ^[A-Za-z0-9][A-Za-z0-9._-]*$ or put the mission at "
                                ".harness/missions/<dir>/mission.yaml)")
        try:
            self.root = Path(root).resolve(strict=True)
        except FileNotFoundError:
            raise ArtifactError(f"root {root} does not exist") from None
        except OSError as exc:
            raise ArtifactError(f"root {root}: {exc.strerror}") from None
        if not self.root.is_dir():
            raise ArtifactError(f"root {self.root} is not a directory")
        self.mission_dir = self.root / MISSIONS_RELPATH / mission_dir
        self.redactor = redactor or Redactor()

    def _check(self, path: Path, *, inside: Path) -> Path:
        path = Path(os.path.normpath(path))
        if not path.is_relative_to(inside):
            raise ArtifactError(f"artifact path {path} escapes {inside}")
        refuse_symlinks(self.root, path)
        return path

    def path(self, *parts: str) -> Path:
        return self._check(self.mission_dir.joinpath(*parts), inside=self.mission_dir)

    def run_dir(self, run_id: str) -> Path:
        return self.path("runs", validate_run_id(run_id))

    def _audit_path(self) -> Path:
        return self._check(self.root / AUDIT_RELPATH / "events.ndjson", inside=self.root / AUDIT_RELPATH)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def preflight(self, run_id: str) -> None:
        """Before the first write: safe paths, a readable index, a writable root."""
        run_dir = self.run_dir(run_id)
        for parts in (("latest.json",), ("runtime-result.yaml",), ("runs", "index.json")):
            self.path(*parts)
        self._audit_path()
        self.read_index()
        existing = next(p for p in (run_dir, *run_dir.parents) if p.exists())
        try:  # a real probe: root ignores permission bits, read-only mounts do not
            with tempfile.TemporaryFile(dir=existing, prefix=".hermes-nb-probe-"):
                pass
        except OSError as exc:
            raise ArtifactError(f"cannot write under {existing}: not writable ({exc.strerror or exc})") from None

    def claim_run_id(self, run_id: str, *, explicit: bool) -> str:
        """Create the run directory exclusively: a generated id another run took is drawn again."""
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

    def _mkdirs(self, directory: Path) -> None:
        refuse_symlinks(self.root, directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArtifactError(f"cannot create {directory}: {exc.strerror}") from None

    def open(self, path: Path, mode: str = "a") -> IO[Any]:
        """Open a checked path for writing, never through a final symlink."""
        self._mkdirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if mode == "a" else os.O_TRUNC)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArtifactError(f"refusing to write through symlink {path}") from None
            raise ArtifactError(f"cannot write {path}: {exc.strerror}") from None
        return os.fdopen(fd, mode) if "b" in mode else os.fdopen(fd, mode, encoding="utf-8", newline="")

    def write_text(self, path: Path, text: str, *, atomic: bool = False) -> Path:
        text = self.redactor.text(text)
        if atomic:  # a document replaces a final symlink, never follows it
            self._mkdirs(path.parent)
            if path.is_symlink():
                raise ArtifactError(f"refusing to write through symlink {path}")
            return write_atomic(path, text)
        with self.open(path, "w") as fh:
            fh.write(text)
        return path

    def write_line(self, handle: IO[str], obj: dict[str, Any]) -> None:
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if not _surely_clean(line, self.redactor):
            line = json.dumps(self.redactor.data(obj), ensure_ascii=False, separators=(",", ":"))
        handle.write(line + "\n")
        handle.flush()

    def write_bytes(self, path: Path, data: bytes) -> Path:
        with self.open(path, "wb") as fh:
            fh.write(data)
        return path

    def write_json(self, path: Path, obj: Any) -> Path:
        """UH's format: 2-space indent, no final newline."""
        return self.write_text(path, json.dumps(self.redactor.data(obj), indent=2, ensure_ascii=False), atomic=True)

    def write_yaml(self, path: Path, obj: Any) -> Path:
        return self.write_text(path, dump_yaml(self.redactor.data(obj)), atomic=True)

    def mark(self, run_id: str, started_at: str, status: str, finished_at: str | None = None, **entry: Any) -> None:
        """``latest.json`` and the run's entry in the index."""
        self.write_json(self.path("latest.json"), uh_document(
            LatestRun, schema_version="uh.latest-run.v0", run_id=run_id, started_at=started_at,
            finished_at=finished_at, status=status))
        self.update_index(run_id, started_at=started_at, finished_at=finished_at, status=status, **entry)

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
        """Insert or update ``run_id``'s entry under a lock on ``runs/`` itself (no lock file in UH's tree)."""
        runs = self.path("runs")
        self._mkdirs(runs)
        try:
            fd = os.open(runs, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise ArtifactError(f"cannot open {runs}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            index = self.read_index()
            entries = index["runs"]
            at = next((i for i, e in enumerate(entries) if isinstance(e, dict) and e.get("run_id") == run_id),
                      len(entries))
            old = entries[at] if at < len(entries) else {"run_id": run_id}
            entries[at:at + 1] = [uh_document(RunsIndexEntry, **{**old, **fields})]  # (at the end: appended)
            self.write_json(self.path("runs", "index.json"), index)
        finally:
            os.close(fd)  # releases the lock

    def audit(self, event: str, payload: dict[str, Any]) -> None:
        with self.open(self._audit_path(), "a") as fh:
            self.write_line(fh, {"type": event, "timestamp": iso_now(), **payload})
