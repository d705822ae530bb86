"""A throwaway copy of the mission's project for one run (UH's ``directory`` sandbox).

The copy keeps ``.git`` (so diff capture works the same inside the sandbox)
and skips ``.harness/`` (artifacts are written to the real root), virtual
environments and caches. Symlinks are copied as symlinks, never followed.
The sandbox is removed when the context exits; ``--no-sandbox`` runs in place.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import HARNESS_DIR

__all__ = ["SKIP_NAMES", "MAX_SANDBOX_ENTRIES", "sandbox_copy", "workdir"]

#: Directory names never copied into a sandbox.
SKIP_NAMES = frozenset({
    HARNESS_DIR, ".venv", ".venv-hermes", "venv", "node_modules", "__pycache__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".ipynb_checkpoints",
})


#: A project with more entries than this is not copied (use ``--no-sandbox``).
MAX_SANDBOX_ENTRIES = 50_000


class _Counter:
    """copytree ``ignore`` callback that skips :data:`SKIP_NAMES` and caps the number of entries."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in SKIP_NAMES}
        self.count += len(names) - len(skipped)
        if self.count > self.limit:
            raise ArtifactError(f"project {directory} has more than {self.limit} entries: too large for a "
                                "sandbox copy (use --no-sandbox)")
        return skipped


@contextmanager
def sandbox_copy(project: str | Path, *, prefix: str = "hermes-nb-sandbox-",
                 max_entries: int | None = None) -> Iterator[Path]:
    """Copy ``project`` into a fresh temporary directory; yield the copy; remove it afterwards."""
    source = Path(project)
    if not source.is_dir():
        raise ArtifactError(f"sandbox source {source} is not a directory")
    parent = Path(tempfile.mkdtemp(prefix=prefix))
    target = parent / (source.resolve().name or "project")
    try:
        try:
            limit = MAX_SANDBOX_ENTRIES if max_entries is None else max_entries
            shutil.copytree(source, target, symlinks=True, ignore=_Counter(limit))
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
