"""Outputs land whole or not at all; run ids, timestamps and digests in UH's formats. Before a job starts, the
``prove_*`` functions *create* what writing will need (root passes every ``os.access``; a read-only mount refuses)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError, UsageError

#: characters encoded per write: a 10 MB prompt is never encoded whole a second time
_PIECE = 1 << 20
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def iso_now(now: datetime | None = None) -> str:
    """``2026-12-02T15:40:20.123Z`` (UTC, milliseconds)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-`` plus 6 lowercase hex (UTC)."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def validate_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not _RUN_ID_RE.match(run_id) or run_id in (".", ".."):
        raise ArtifactError(f"invalid run id {run_id!r}: must match {_RUN_ID_RE.pattern}")
    return run_id


def sha256_file(path: str | os.PathLike[str]) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def json_digest(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces, UTF-8 kept)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stream(path: Path) -> bool:
    """``path`` exists and is a device or a pipe: written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _real(path: str | os.PathLike[str]) -> Path:
    """The file a final symlink names (it is that file that is proven and replaced), else ``path``."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)


def prove_writable(path: str | os.PathLike[str], what: str, *, append: bool = False) -> Path:
    """Prove now that ``path`` can be written at the end (with ``append``, the file itself); else a UsageError."""
    target = _real(path)
    try:
        if target.is_dir():
            raise IsADirectoryError(0, "is a directory")
        parent = target.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise NotADirectoryError(0, f"{parent} is not a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        if append or _stream(target):  # never blocks: a pipe with no reader is refused, not waited on
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666))
            return target
        fd, name = _create_beside(target)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"{what} {path}: not writable ({exc.strerror or exc})") from None
    return target


def prove_dir(path: str | os.PathLike[str], what: str) -> Path:
    target = Path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {path}: not a writable directory ({exc.strerror or exc})") from None
    return target


def _create_beside(target: Path) -> tuple[int, str]:
    """A new ``.<name>.<hex>.tmp`` next to ``target``, mode 0666 less the umask like any output."""
    name = str(target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp"))
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, what: str = "") -> Path:
    """``data`` to ``path`` (a symlink followed) whole or not at all, or one :class:`ArtifactError` line."""
    target = _real(path)
    name = None
    try:
        if _stream(target):
            with open(target, "wb") as handle:
                _write(handle, data)
            return Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = _create_beside(target)
        with os.fdopen(fd, "wb") as handle:
            _write(handle, data)
        os.replace(name, target)
        name = None
    except OSError as exc:
        label = f"{what} {path}" if what else str(path)
        raise ArtifactError(f"cannot write {label}: {exc.strerror or exc}") from None
    finally:
        if name is not None:  # failed or interrupted
            with contextlib.suppress(OSError):
                os.unlink(name)
    return Path(path)


def _write(handle: Any, data: str | bytes) -> None:
    if isinstance(data, bytes):
        handle.write(data)
        return
    for piece in utf8_pieces(data):
        handle.write(piece)


def utf8_pieces(text: str, errors: str = "strict") -> Iterator[bytes]:
    """``text`` encoded a piece at a time: a 10 MB prompt is never encoded whole a second time."""
    for start in range(0, len(text), _PIECE):
        yield text[start:start + _PIECE].encode("utf-8", errors)
