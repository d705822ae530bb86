"""Outputs land whole or not at all: one way to prove an output writable, one way to write it.

:func:`prove_writable` (a file) and :func:`prove_dir` (a directory) run before a job starts and *create*
what writing will need: a permission check is not enough (root passes every ``os.access``, and ``/proc`` or a
read-only mount refuses anyway). :func:`write_atomic` writes a temporary file beside the target and renames it
over the target, so a reader sees the old document or the new one, never a part; a write that fails (a full
disk) removes its temporary file and leaves no empty target, and is one :class:`ArtifactError` line naming the
output. A target that exists and is no regular file (``/dev/stdout``, a pipe) is written in place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import IO

from hermes_nb.core.errors import ArtifactError, UsageError

__all__ = ["prove_writable", "prove_dir", "write_atomic"]

#: characters encoded per write: a 10 MB prompt is never encoded whole a second time
_PIECE = 1 << 20


def _stream(path: Path) -> bool:
    """True when ``path`` exists and is no regular file or directory (a device, a pipe): written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _blocked_by(path: Path) -> str | None:
    """Why ``path``'s directory cannot be made: its nearest existing ancestor is no directory."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return None if parent.is_dir() else f"{parent} is not a directory"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _real(path: str | os.PathLike[str]) -> Path:
    """The file a final symlink names (it is that file that is proven and replaced), else ``path``."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)


def prove_writable(path: str | os.PathLike[str], what: str, *, append: bool = False) -> Path:
    """Prove now that ``path`` can be written at the end: its directory is created and a file is created beside
    it (and removed). ``append``: the file itself is opened for appending instead (created if missing: GitHub's
    step summary). A :class:`UsageError` ``<what> <path>: not writable (<why>)`` otherwise."""
    target = _real(path)
    try:
        if target.is_dir():
            raise IsADirectoryError(0, "is a directory")
        if (blocked := _blocked_by(target)) is not None:
            raise NotADirectoryError(0, blocked)
        target.parent.mkdir(parents=True, exist_ok=True)
        if append or _stream(target):  # never blocks: a pipe with no reader is refused, not waited on
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666))
            return target
        fd, name = _create_beside(target)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"{what} {path}: not writable ({_why(exc)})") from None
    return target


def prove_dir(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` created if needed and proven writable by creating a file in it; else a :class:`UsageError`
    ``<what> <path>: not a writable directory (<why>)``."""
    target = Path(path)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {path}: not a writable directory ({_why(exc)})") from None
    return target


def _create_beside(target: Path) -> tuple[int, str]:
    """A new temporary file next to ``target`` (``.<name>.<hex>.tmp``), mode 0666 less the umask like any output."""
    name = str(target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp"))
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, what: str = "") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all (see the module docstring), its directory
    created if needed. A failure is :class:`ArtifactError` ``cannot write <what> <path>: <why>``, with no
    temporary file left behind. A symlink is followed: the file it names is replaced."""
    target = _real(path)
    label = f"{what} {path}" if what else str(path)
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
        raise ArtifactError(f"cannot write {label}: {_why(exc)}") from None
    finally:
        if name is not None:  # failed or interrupted: the temporary file goes, the target is untouched
            with contextlib.suppress(OSError):
                os.unlink(name)
    return Path(path)


def _write(handle: IO[bytes], data: str | bytes) -> None:
    if isinstance(data, bytes):
        handle.write(data)
        return
    for start in range(0, len(data), _PIECE):
        handle.write(data[start:start + _PIECE].encode("utf-8"))
