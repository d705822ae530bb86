"""The directory a run works in (the project, or a throwaway copy: UH's ``directory`` sandbox) and the diff of what
changed in it: the working tree as a git tree through a temporary index (the user's untouched) before and after."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import HARNESS_DIR

#: directory names never copied into a sandbox
SKIP_NAMES = frozenset({HARNESS_DIR, ".venv", ".venv-hermes", "venv", "node_modules", "__pycache__", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", ".tox", ".ipynb_checkpoints"})
#: a project with more entries is not copied (``--no-sandbox`` runs in place)
MAX_SANDBOX_ENTRIES = 50_000
MAX_DIFF_BYTES = 50 * 1024 * 1024
_GIT_TIMEOUT_S = 120.0


@contextmanager
def workdir(project: str | Path, *, sandbox: bool, max_entries: int | None = None) -> Iterator[Path]:
    """``project`` itself, or a copy of it (``.git`` kept, :data:`SKIP_NAMES` skipped) removed afterwards."""
    source = Path(project)
    if not sandbox:
        yield source
        return
    if not source.is_dir():
        raise ArtifactError(f"sandbox source {source} is not a directory")
    limit, count = max_entries or MAX_SANDBOX_ENTRIES, 0

    def ignore(directory: str, names: list[str]) -> set[str]:
        nonlocal count
        skipped = set(SKIP_NAMES.intersection(names))
        count += len(names) - len(skipped)
        if count > limit:
            raise ArtifactError(f"project {directory} has more than {limit} entries: too large for a sandbox copy "
                                "(use --no-sandbox)")
        return skipped

    parent = Path(tempfile.mkdtemp(prefix="hermes-nb-sandbox-"))
    target = parent / (source.resolve().name or "project")
    try:
        try:
            shutil.copytree(source, target, symlinks=True, ignore=ignore)
        except (shutil.Error, OSError) as exc:
            raise ArtifactError(f"cannot copy {source} into a sandbox: {exc}") from None
        yield target
    finally:
        shutil.rmtree(parent, ignore_errors=True)


class _GitFailed(Exception):
    pass


@dataclass
class Diff:
    cwd: Path
    #: the working tree at the start, as a git tree (None: not a git work tree, or git failed)
    tree: str | None = None
    commit: str | None = None
    patch: bytes = b""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _git(cwd: Path, *args: str, index: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=_GIT_TIMEOUT_S,
                              check=False)
    except FileNotFoundError:
        raise _GitFailed("git executable not found") from None
    except subprocess.TimeoutExpired:
        raise _GitFailed(f"git {args[0]} timed out after {_GIT_TIMEOUT_S:.0f} s") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(f"git {args[0]} failed: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc


def _tree_of_worktree(cwd: Path) -> str:
    git_index = _git(cwd, "rev-parse", "--git-path", "index").stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="hermes-nb-index-") as tmp:
        index = Path(tmp) / "index"
        if (cwd / git_index).is_file():  # (an absolute git_index stays itself)
            shutil.copyfile(cwd / git_index, index)  # keeps the stat cache: add -A stays fast
        else:
            _git(cwd, "read-tree", "--empty", index=index)
        _git(cwd, "add", "-A", "--", ".", f":(exclude){HARNESS_DIR}", index=index)
        return _git(cwd, "write-tree", index=index).stdout.decode().strip()


def snapshot(cwd: str | Path) -> Diff:
    """The base commit (if any) and the working-tree snapshot at the start of a run."""
    path = Path(cwd)
    try:
        inside = _git(path, "rev-parse", "--is-inside-work-tree", check=False)
    except _GitFailed as exc:
        return Diff(path, notes=[f"diff capture skipped: {exc}"])
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return Diff(path, notes=[f"diff capture skipped: {path} is not a git work tree"])
    head = _git(path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    commit = head.stdout.decode().strip() if head.returncode == 0 else None
    try:
        return Diff(path, tree=_tree_of_worktree(path), commit=commit)
    except _GitFailed as exc:
        return Diff(path, commit=commit, errors=[f"Diff capture failed: {exc}"])


def capture(diff: Diff) -> Diff:
    """``diff`` with the binary-safe patch of what changed since :func:`snapshot`."""
    if diff.tree is None:
        return diff
    try:
        tree = _tree_of_worktree(diff.cwd)
        if tree != diff.tree:
            diff.patch = _git(diff.cwd, "diff", "--binary", "--no-color", "--no-ext-diff", diff.tree, tree).stdout
    except _GitFailed as exc:
        diff.errors.append(f"Diff capture failed: {exc}")
    if len(diff.patch) > MAX_DIFF_BYTES:
        diff.patch = diff.patch[:MAX_DIFF_BYTES]
        diff.errors.append(f"Diff capture truncated at {MAX_DIFF_BYTES} bytes")
    return diff
