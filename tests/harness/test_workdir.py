"""Diff capture: snapshot at start, binary-safe diff at the end, user's index untouched."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from hermes_nb.harness.run import capture, snapshot, workdir


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    (root / ".gitignore").write_text("ignored.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def index_digest(root: Path) -> str:
    return hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest()


def test_clean_tree_gives_empty_diff(repo: Path) -> None:
    base = snapshot(repo)
    assert base.commit and base.tree
    assert capture(base).patch == b""


def test_changes_untracked_binary_and_exclusions(repo: Path) -> None:
    (repo / "dirty.txt").write_text("before the run\n")  # pre-existing change: not the run's
    before = index_digest(repo)
    base = snapshot(repo)
    (repo / "a.txt").write_text("two\n")
    (repo / "new.txt").write_text("untracked\n")
    (repo / "blob.bin").write_bytes(bytes(range(256)))
    (repo / "ignored.log").write_text("ignored\n")
    (repo / ".harness").mkdir()
    (repo / ".harness" / "x.json").write_text("{}")
    result = capture(base)
    patch = result.patch.decode()
    assert result.errors == []
    assert "-one\n+two" in patch
    assert "new file mode" in patch and "+untracked" in patch
    assert "GIT binary patch" in patch
    assert "ignored.log" not in patch and ".harness" not in patch and "dirty.txt" not in patch
    assert index_digest(repo) == before  # the user's index is untouched
    assert "new.txt" in git(repo, "status", "--porcelain")  # still untracked for the user
    # the patch applies to the base state
    check = subprocess.run(["git", "apply", "--check", "-R", "-"], cwd=repo, input=result.patch, capture_output=True)
    assert check.returncode == 0, check.stderr


def test_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    base = snapshot(tmp_path)
    assert base.tree and base.commit is None
    (tmp_path / "f.txt").write_text("x\n")
    assert b"+x" in capture(base).patch


def test_not_a_git_dir(tmp_path: Path) -> None:
    base = snapshot(tmp_path)
    result = capture(base)
    assert result.patch == b"" and result.errors == []
    assert "not a git work tree" in result.notes[0]


def test_deletion(repo: Path) -> None:
    base = snapshot(repo)
    (repo / "a.txt").unlink()
    assert b"deleted file mode" in capture(base).patch


def test_sandbox_copy_keeps_git_skips_harness_and_is_removed(repo: Path) -> None:
    (repo / ".harness").mkdir()
    (repo / ".harness" / "secret.json").write_text("{}")
    (repo / "link").symlink_to("/etc/passwd")
    with workdir(repo, sandbox=True) as copy:
        assert (copy / ".git").is_dir() and (copy / "a.txt").read_text() == "one\n"
        assert not (copy / ".harness").exists()
        assert (copy / "link").is_symlink()
        base = snapshot(copy)
        (copy / "a.txt").write_text("changed in sandbox\n")
        assert b"changed in sandbox" in capture(base).patch
        kept = copy
    assert not kept.exists()
    assert (repo / "a.txt").read_text() == "one\n"


def test_workdir_in_place(repo: Path) -> None:
    with workdir(repo, sandbox=False) as wd:
        assert wd == repo


def test_sandbox_refuses_huge_project(tmp_path: Path) -> None:
    from hermes_nb.core.errors import ArtifactError

    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    with pytest.raises(ArtifactError, match="too large for a sandbox copy"):
        with workdir(tmp_path, sandbox=True, max_entries=3):
            pass
