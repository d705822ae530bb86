"""A throwaway copy of the mission's project for one run (UH's ``directory`` sandbox).

The copy keeps ``.git`` (so diff capture works the same inside the sandbox)
and skips ``.harness/`` (artifacts are written to the real root), virtual
environments and caches. Symlinks are copied as symlinks, never followed.
The sandbox is removed when the context exits; ``--no-sandbox`` runs in place.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import ArtifactError

__all__ = ["SKIP_NAMES", "sandbox_copy", "workdir"]

#: Directory names never copied into a sandbox.
SKIP_NAMES = frozenset({
    ".harness", ".venv", ".venv-hermes", "venv", "node_modules", "__pycache__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".ipynb_checkpoints",
})


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_NAMES}


@contextmanager
def sandbox_copy(project: str | Path, *, prefix: str = "hermes-nb-sandbox-") -> Iterator[Path]:
    """Copy ``project`` into a fresh temporary directory; yield the copy; remove it afterwards."""
    source = Path(project)
    if not source.is_dir():
        raise ArtifactError(f"sandbox source {source} is not a directory")
    parent = Path(tempfile.mkdtemp(prefix=prefix))
    target = parent / (source.resolve().name or "project")
    try:
        try:
            shutil.copytree(source, target, symlinks=True, ignore=_ignore)
        except (shutil.Error, OSError) as exc:
            raise ArtifactError(f"cannot copy {source} into a sandbox: {exc}") from None
        yield target
    finally:
        shutil.rmtree(parent, ignore_errors=True)


@contextmanager
def workdir(project: str | Path, *, sandbox: bool) -> Iterator[Path]:
    """The directory a run works in: a sandbox copy, or ``project`` itself."""
    if not sandbox:
        yield Path(project)
        return
    with sandbox_copy(project) as copy:
        yield copy
