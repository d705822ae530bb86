"""Diff capture that never touches the user's git index.

At the start of a run :func:`snapshot` records the base commit (``HEAD``, if
any) and a *tree* of the working directory as it is then (tracked and
untracked files, ignored files and ``.harness/`` excluded), built in a
temporary index (``GIT_INDEX_FILE``). At the end :func:`capture` builds the
same tree again and diffs the two with ``git diff --binary``, so the patch
holds exactly what changed during the run (new untracked files included,
binary-safe) and the common case — the model mutates nothing — is ``""``.

A directory that is not inside a git work tree gives an empty diff and a note.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DiffBase", "DiffResult", "snapshot", "capture", "MAX_DIFF_BYTES"]

MAX_DIFF_BYTES = 50 * 1024 * 1024
_TIMEOUT_S = 120.0
_PATHSPEC = ["--", ".", ":(exclude).harness"]


class _GitFailed(Exception):
    """A git command failed (internal; turned into a note)."""


@dataclass
class DiffBase:
    cwd: Path
    git: bool
    commit: str | None = None
    tree: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class DiffResult:
    patch: bytes = b""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _git(cwd: Path, *args: str, index: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise _GitFailed("git executable not found") from None
    except subprocess.TimeoutExpired:
        raise _GitFailed(f"git {args[0]} timed out after {_TIMEOUT_S:.0f} s") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(f"git {args[0]} failed: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc


def _tree_of_worktree(cwd: Path) -> str:
    """Write the working tree (as ``git add -A`` would stage it) as a tree object, via a temp index."""
    git_index = _git(cwd, "rev-parse", "--git-path", "index").stdout.decode().strip()
    real_index = Path(git_index) if os.path.isabs(git_index) else cwd / git_index
    with tempfile.TemporaryDirectory(prefix="hermes-nb-index-") as tmp:
        index = Path(tmp) / "index"
        if real_index.is_file():
            shutil.copyfile(real_index, index)  # keeps the stat cache: add -A stays fast
        else:
            _git(cwd, "read-tree", "--empty", index=index)
        _git(cwd, "add", "-A", *_PATHSPEC, index=index)
        return _git(cwd, "write-tree", index=index).stdout.decode().strip()


def snapshot(cwd: str | Path) -> DiffBase:
    """Record the base commit and the working-tree snapshot at the start of a run."""
    path = Path(cwd)
    try:
        inside = _git(path, "rev-parse", "--is-inside-work-tree", check=False)
    except _GitFailed as exc:
        return DiffBase(path, git=False, notes=[f"diff capture skipped: {exc}"])
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return DiffBase(path, git=False, notes=[f"diff capture skipped: {path} is not a git work tree"])
    head = _git(path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    commit = head.stdout.decode().strip() if head.returncode == 0 else None
    try:
        tree = _tree_of_worktree(path)
    except _GitFailed as exc:
        return DiffBase(path, git=True, commit=commit, notes=[f"Diff capture failed: {exc}"])
    return DiffBase(path, git=True, commit=commit, tree=tree)


def capture(base: DiffBase) -> DiffResult:
    """The binary-safe patch of what changed since :func:`snapshot` (``b""`` when nothing did)."""
    if not base.git:
        return DiffResult(notes=list(base.notes))
    if base.tree is None:
        return DiffResult(errors=list(base.notes))
    try:
        tree = _tree_of_worktree(base.cwd)
        if tree == base.tree:
            return DiffResult()
        proc = _git(base.cwd, "diff", "--binary", "--no-color", "--no-ext-diff", base.tree, tree)
    except _GitFailed as exc:
        return DiffResult(errors=[f"Diff capture failed: {exc}"])
    patch = proc.stdout
    if len(patch) > MAX_DIFF_BYTES:
        return DiffResult(patch=patch[:MAX_DIFF_BYTES],
                          errors=[f"Diff capture truncated at {MAX_DIFF_BYTES} bytes"])
    return DiffResult(patch=patch)
