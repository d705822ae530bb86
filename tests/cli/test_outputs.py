"""Every output lands whole or the command fails: proven writable before anything runs (by creating, so root and
/proc are no exception), written atomically, and one line naming it when it cannot be written at the end.

A full filesystem is played by RLIMIT_FSIZE in the child (a write past the limit fails with EFBIG, as a full disk
fails with ENOSPC) and by ``/dev/full`` (ENOSPC on every write): the same paths through the code.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

SMOKE = ["smoke", "--only", "adapter_check", "--no-html"]


def _cli(*args: str, fsize: int | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_", "GITHUB_"))}

    def limit() -> None:
        if fsize is not None:  # a "full disk": no file may grow past fsize bytes (the kernels' small files fit)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env, preexec_fn=limit)
    return proc.returncode, proc.stdout, proc.stderr


def _leftovers(*directories: Path) -> list[str]:
    return [str(p) for d in directories if d.exists() for p in d.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/proc/self").exists(), reason="root with /proc (as CI containers)")
def test_as_root_an_output_under_proc_is_exit_2_before_any_notebook_runs(tmp_path: Path) -> None:
    out = tmp_path / "receipts"
    code, stdout, err = _cli(*SMOKE, "--out", str(out), "--junit-xml", "/proc/nope/junit.xml", "--json")
    assert code == 2, err[-2000:]
    assert json.loads(stdout)["error"].startswith("junit xml output /proc/nope/junit.xml: not writable (")
    assert "Traceback" not in err and "running" not in err and not out.exists()  # nothing ran, nothing written


def test_on_a_full_filesystem_smoke_out_is_one_json_object_and_a_failure_without_leftovers(tmp_path: Path) -> None:
    out = tmp_path / "receipts"
    code, stdout, err = _cli(*SMOKE, "--out", str(out), "--json", fsize=600)
    doc = json.loads(stdout)  # exactly one object
    assert code != 0 and doc["exit_code"] == code, err[-2000:]
    assert "Traceback" not in err
    assert doc["receipts"][0]["reason"].startswith("cannot write ") and "File too large" in doc["receipts"][0]["reason"]
    assert doc["problems"] and all(p.startswith(f"cannot write {out}") for p in doc["problems"])
    assert [line for line in err.splitlines() if line.startswith("hermes-nb: error:")] == [
        f"hermes-nb: error: {p}" for p in doc["problems"]]
    assert _leftovers(out) == []
    assert not list(out.rglob("*.ipynb"))  # the receipt that could not be written whole is not there in part


def test_on_a_full_filesystem_ci_outputs_fail_the_command_and_leave_no_empty_file(tmp_path: Path) -> None:
    ci = tmp_path / "ci"
    code, stdout, err = _cli(*SMOKE, "--out", str(tmp_path / "receipts"), "--junit-xml", str(ci / "junit.xml"),
                             "--summary-md", str(ci / "summary.md"), fsize=600)
    assert code != 0 and "Traceback" not in err, err[-2000:]
    assert f"hermes-nb: error: cannot write JUnit XML {ci / 'junit.xml'}: File too large" in err
    assert f"hermes-nb: error: cannot write summary {ci / 'summary.md'}: File too large" in err
    assert list(ci.iterdir()) == []  # no 0-byte file for a CI publisher to read, no temporary file


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_passing_smoke_whose_junit_cannot_be_written_exits_2(tmp_path: Path) -> None:
    code, stdout, err = _cli(*SMOKE, "--out", str(tmp_path / "receipts"), "--junit-xml", "/dev/full", "--json")
    doc = json.loads(stdout)
    assert (code, doc["exit_code"], doc["verdict"]) == (2, 2, "passed"), err[-2000:]
    assert doc["problems"] == ["cannot write JUnit XML /dev/full: No space left on device"]
    assert "junit_xml" not in doc and "Traceback" not in err
