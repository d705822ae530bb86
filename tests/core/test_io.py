"""Outputs land whole or not at all: proven writable by creating, written beside and renamed, nothing left over."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import hermes_nb.core.io as io
from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.io import prove_dir, prove_writable, write_atomic


def test_a_document_replaces_the_old_one_whole_with_the_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.xml"
    assert write_atomic(target, "é" * 3) == target
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new" and os.listdir(target.parent) == ["report.xml"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "interrupted"])
def test_a_failed_write_leaves_the_old_document_and_no_temporary_file(tmp_path: Path, failure: BaseException,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "index.json"
    target.write_text("old")

    def half(handle: object, data: object) -> None:
        handle.write(b"half of it")  # type: ignore[attr-defined]
        raise failure

    monkeypatch.setattr(io, "_write", half)
    expected = ArtifactError if isinstance(failure, OSError) else KeyboardInterrupt
    with pytest.raises(expected) as info:
        write_atomic(target, "new", what="receipts index")
    if expected is ArtifactError:
        assert str(info.value) == f"cannot write receipts index {target}: No space left on device"
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["index.json"]


def test_a_new_document_that_cannot_be_written_leaves_no_empty_file(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def full(handle: object, data: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "_write", full)
    with pytest.raises(ArtifactError):
        write_atomic(tmp_path / "junit.xml", "<testsuite/>")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_device_is_written_in_place_and_its_failure_is_one_line() -> None:
    with pytest.raises(ArtifactError, match=r"^cannot write JUnit XML /dev/full: No space left on device$"):
        write_atomic("/dev/full", "<testsuite/>", what="JUnit XML")
    assert prove_writable("/dev/full", "junit xml output") == Path("/dev/full")  # writable; full only at the end
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # never replaced by a regular file


def test_proving_creates_the_directory_and_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "ci" / "junit.xml"
    prove_writable(target, "junit xml output")
    assert target.parent.is_dir() and list(target.parent.iterdir()) == []
    with pytest.raises(UsageError, match=r"junit xml output .*: not writable \(is a directory\)"):
        prove_writable(tmp_path, "junit xml output")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match=rf"not writable \({blocker} is not a directory\)"):
        prove_writable(blocker / "junit.xml", "junit xml output")
    with pytest.raises(UsageError, match="receipts directory .*: not a writable directory"):
        prove_dir(blocker, "receipts directory")


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/proc/self").exists(), reason="root with /proc")
def test_as_root_a_pseudo_filesystem_is_proven_unwritable_by_trying() -> None:
    """Root passes every permission check; /proc refuses the directory anyway."""
    assert os.access("/proc", os.W_OK)  # what the old check asked, and why it let this through
    with pytest.raises(UsageError, match=r"^junit xml output /proc/nope/junit.xml: not writable \("):
        prove_writable("/proc/nope/junit.xml", "junit xml output")
