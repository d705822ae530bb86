"""Ctrl-C at any moment: one line and the documented exit code, never a traceback; --json agrees.

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

from hermes_nb.cli import interrupts
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
    signal and threading modules (a Ctrl-C in the first ~15 ms)."""
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


def _import_lines(seen: bytes) -> int:
    """How many imports completed since the program owned its signals (``-X importtime`` lines after ours)."""
    return seen.split(b"hermes_nb.cli.interrupts", 1)[-1].count(b"import time:")


def test_a_signal_at_any_moment_of_start_up_is_one_line_and_its_exit_code(emu: EmulatorHandle, tmp_path: Path) -> None:
    """From the program's first line to the command's work: a signal after the k-th import for k across the whole
    start-up (pydantic-core's native init among them), SIGINT and SIGTERM in turn. Synchronised on the imports the
    child reports, never on time."""
    args = ["check", "--json", "--model", "hermes-4-405b", "--runtime-config-overrides", STALL]
    reference = spawn([*args, "--endpoint", "http://127.0.0.1:9/v1"], tmp_path, "-X", "importtime")  # refused: ends
    lines = reference.communicate(timeout=LIMIT_S)[1]
    total = _import_lines(lines)
    assert total > 100 and b"pydantic_core" in lines.split(b"hermes_nb.cli.interrupts", 1)[-1], total
    args.extend(["--endpoint", emu.endpoint])  # stalled: alive whenever the signal comes
    for n, count in enumerate(range(0, total * 4 // 5, max(1, total // 15))):  # after the request: the test above
        signum = (signal.SIGINT, signal.SIGTERM)[n % 2]
        proc = spawn(args, tmp_path, "-X", "importtime")
        assert proc.stderr is not None
        seen = read_until(proc.stderr.fileno(), b"hermes_nb.cli.interrupts")
        while _import_lines(seen) < count:
            ready, _, _ = select.select([proc.stderr.fileno()], [], [], LIMIT_S)
            assert ready, f"the start-up stopped after {_import_lines(seen)} imports"
            seen += os.read(proc.stderr.fileno(), 65536)
        proc.send_signal(signum)
        code, out, err = finish(proc, seen)
        assert code == 128 + signum, (count, err[-2000:])
        assert "Traceback" not in err and "PanicException" not in err, (count, err[-2000:])
        assert our_lines(err) == ["hermes-nb: error: interrupted"] and json.loads(out)["exit_code"] == code, count


NATIVE_INIT_SIGNAL = """
import os, signal, sys
state = {"init": False, "sent": False}

def hook(event, args):  # the first import inside pydantic-core's init (datetime's C API) gets the signal
    if event != "import":
        return
    if args[0] == "pydantic_core._pydantic_core" and args[2] is None:  # _imp.create_dynamic: the init starts
        state["init"] = not state["sent"]
    elif state["init"]:
        state["init"], state["sent"] = False, True
        print("signalled inside the native init", flush=True)
        os.kill(os.getpid(), signal.SIGINT)

import importlib.util
from hermes_nb.harness.signals import Cancelled, SignalGuard
# the program's handlers alone: importing the hermes_nb.cli package would import pydantic before the test can
spec = importlib.util.spec_from_file_location("interrupts", sys.argv[2])
interrupts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(interrupts)
interrupts.install()  # what the program does first; a guard (a smoke's, a run's) takes over like this
guard = SignalGuard(True).__enter__() if sys.argv[1] == "guard" else None
guard.arm() if guard else interrupts.arm()
assert "pydantic_core" not in sys.modules
sys.addaudithook(hook)
try:
    import pydantic_core
except (KeyboardInterrupt, Cancelled) as exc:
    print(type(exc).__name__, flush=True)
import pydantic_core  # whole, once the signal has been delivered
print(pydantic_core.SchemaValidator.__name__)
"""


@pytest.mark.parametrize("handler", ["program", "guard"])
def test_a_signal_inside_a_native_modules_init_is_an_interrupt_not_a_panic(handler: str) -> None:
    """A KeyboardInterrupt raised inside pydantic-core's (pyo3's) init was a pyo3_runtime.PanicException: rc 1, a
    traceback, no JSON. The handler is held back until the init is done, then runs."""
    proc = subprocess.run([sys.executable, "-c", NATIVE_INIT_SIGNAL, handler, interrupts.__file__],
                          capture_output=True, text=True, timeout=LIMIT_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = "KeyboardInterrupt" if handler == "program" else "Cancelled"
    assert proc.stdout.splitlines() == ["signalled inside the native init", expected, "SchemaValidator"]
