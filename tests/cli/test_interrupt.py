"""Ctrl-C at any moment: one line and the documented exit code, never a traceback; --json agrees (issue 10).

Real subprocesses; synchronised on their output (or on the emulator seeing the request), never on sleeps.
A run interrupted mid-request ends ``cancelled`` (exit 1); any other command interrupted exits 130.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_nb.emulator import EmulatorHandle, serve_emulator

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
STALL = json.dumps({"extra_headers": {"x-hermes-emulator-scenario": "stall"}, "request_timeout_ms": 60_000})
LIMIT_S = 60


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorHandle]:
    with serve_emulator() as handle:
        yield handle


def spawn(args: list[str], cwd: Path, *python_flags: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_NB_", "PYTHONWARN"))}
    return subprocess.Popen([sys.executable, *python_flags, "-m", "hermes_nb.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_until(fd: int, marker: bytes) -> bytes:
    """Read a pipe until ``marker`` shows up (bounded by LIMIT_S, so a broken test fails, not hangs)."""
    seen = b""
    deadline = time.monotonic() + LIMIT_S
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no {marker!r} in time; got {seen[-500:]!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"pipe closed before {marker!r}; got {seen[-500:]!r}"
        seen += chunk
    return seen


def ctrl_c_twice(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)  # back to back: well within 20 ms of the first


def finish(proc: subprocess.Popen[bytes], seen_err: bytes = b"") -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=LIMIT_S)
    return proc.returncode, out.decode(), (seen_err + err).decode()


def our_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("hermes-nb:")]


def run_args(emu: EmulatorHandle, root: Path, *extra: str) -> list[str]:
    return ["run", "--prompt", "Do the mission.", "--endpoint", emu.endpoint, "--model", "hermes-4-405b",
            "--root", str(root), "--no-sandbox", "--runtime-config-overrides", STALL, *extra]


def test_ctrl_c_twice_mid_run_cancels_once(emu: EmulatorHandle, tmp_path: Path) -> None:
    proc = spawn(run_args(emu, tmp_path), tmp_path)
    assert proc.stdout is not None
    read_until(proc.stdout.fileno(), b" ")  # the streamed text has begun: the request is in flight
    ctrl_c_twice(proc)
    code, _, err = finish(proc)
    assert code == 1, err  # documented: a cancelled run exits 1, not 130, not killed by the signal
    assert "Traceback" not in err and "[CANCELLED]" in err
    assert our_lines(err) == []  # the run's own report, nothing else


def test_ctrl_c_twice_mid_run_json_agrees_with_the_exit_code(emu: EmulatorHandle, tmp_path: Path) -> None:
    before = len(emu.requests)
    proc = spawn(run_args(emu, tmp_path, "--json"), tmp_path)
    deadline = time.monotonic() + LIMIT_S
    while len(emu.requests) == before:  # the emulator has the request: the client is reading (armed)
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)  # polling the emulator's log, bounded by a deadline
    ctrl_c_twice(proc)
    code, out, err = finish(proc)
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["status"]) == (1, 1, "cancelled"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("marker", [b"hermes_nb.core.errors", b"hermes_nb.cli.app", b"hermes_nb.core.config",
                                    b"hermes_nb.proxy.check"])
@pytest.mark.parametrize("json_mode", [False, True], ids=["human", "json"])
def test_ctrl_c_during_start_up(emu: EmulatorHandle, tmp_path: Path, marker: bytes, json_mode: bool) -> None:
    """-X importtime reports each import as it completes: the signal lands while the CLI is still loading
    (or, at the latest, while check waits on a stalled /models): 130 and one line either way."""
    args = ["check", "--endpoint", emu.endpoint, "--model", "hermes-4-405b",
            "--runtime-config-overrides", STALL, *(["--json"] if json_mode else [])]
    proc = spawn(args, tmp_path, "-X", "importtime")
    assert proc.stderr is not None
    seen = read_until(proc.stderr.fileno(), marker)
    ctrl_c_twice(proc)
    code, out, err = finish(proc, seen)
    assert code == 130, err[-2000:]
    assert "Traceback" not in err
    assert our_lines(err) == ["hermes-nb: error: interrupted"]
    if json_mode:
        assert json.loads(out)["exit_code"] == 130
    else:
        assert out == ""


SCRIPT = Path(sys.executable).parent / "hermes-nb"


@pytest.mark.skipif(not SCRIPT.is_file(), reason="no hermes-nb console script next to this interpreter")
def test_ctrl_c_during_start_up_of_the_console_script(emu: EmulatorHandle, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_NB_")}
    env["PYTHONPROFILEIMPORTTIME"] = "1"  # the same import-time lines as -X importtime
    proc = subprocess.Popen([str(SCRIPT), "check", "--json", "--endpoint", emu.endpoint, "--model", "hermes-4-405b",
                             "--runtime-config-overrides", STALL], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = read_until(proc.stderr.fileno(), b"hermes_nb.cli.interrupts")
    ctrl_c_twice(proc)
    code, out, err = finish(proc, seen)
    assert code == 130 == json.loads(out)["exit_code"], err[-2000:]
    assert "Traceback" not in err and our_lines(err) == ["hermes-nb: error: interrupted"]



def test_nothing_runs_between_the_console_script_and_the_handlers_but_the_package_itself() -> None:
    """The console script imports ``hermes_nb.cli`` (so ``hermes_nb`` first), whose first act is to own SIGINT and
    SIGTERM. A signal during an import before that prints a traceback, so ``import hermes_nb`` imports nothing
    (it used to import typing: ~3 ms, a Ctrl-C there gave a traceback) and the handlers' module needs only the
    signal and threading modules (issue 20: a Ctrl-C in the first ~15 ms)."""
    code = ("import sys; before = set(sys.modules); import hermes_nb; first = set(sys.modules) - before; "
            "before = set(sys.modules); import hermes_nb.harness.signals; "
            "print(sorted(first)); "
            "print(sorted(m for m in set(sys.modules) - before if not m.startswith('hermes_nb')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    package, handlers = proc.stdout.splitlines()
    assert package == "['hermes_nb']", proc.stderr
    assert "typing" not in eval(handlers), handlers


@pytest.mark.parametrize("json_mode", [False, True], ids=["human", "json"])
def test_sigterm_during_start_up_is_one_line_and_143(emu: EmulatorHandle, tmp_path: Path, json_mode: bool) -> None:
    """A CI runner cancelling the job sends SIGTERM: the CLI owns it like Ctrl-C, exit 128 + 15."""
    args = ["check", "--endpoint", emu.endpoint, "--model", "hermes-4-405b",
            "--runtime-config-overrides", STALL, *(["--json"] if json_mode else [])]
    proc = spawn(args, tmp_path, "-X", "importtime")
    assert proc.stderr is not None
    seen = read_until(proc.stderr.fileno(), b"hermes_nb.core.errors")
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    code, out, err = finish(proc, seen)
    assert code == 143, err[-2000:]
    assert "Traceback" not in err and our_lines(err) == ["hermes-nb: error: interrupted"]
    if json_mode:
        assert json.loads(out)["exit_code"] == 143


def test_sigterm_while_run_copies_its_sandbox_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """SIGTERM before the run's request (here: while the sandbox copy of a big project is made) used to kill the
    process with the copy left in TMPDIR; now it unwinds: 143, one line, TMPDIR empty."""
    project = tmp_path / "project"
    for i in range(400):
        (project / f"d{i % 20}").mkdir(parents=True, exist_ok=True)
        (project / f"d{i % 20}" / f"f{i}.txt").write_bytes(b"x" * 20_000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_NB_")} | {"TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "run", "--prompt", "hi", "--root", str(project),
                             "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + LIMIT_S
    while not any(tmp.rglob("f*.txt")):  # the sandbox copy is under way (polling the directory, with a deadline)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.001)
    proc.send_signal(signal.SIGTERM)
    code, _, err = finish(proc)
    assert code in (1, 143), err[-2000:]  # 1: the signal came once the run had started: it ends cancelled
    assert "Traceback" not in err
    assert list(tmp.iterdir()) == [], (code, err)
