"""The kernel fork server ("zygote"), runner side: opt-in, ``HERMES_NB_KERNEL_FORK=1``.

Every kernel of a smoke run pays the same start-up: the imports of ipykernel,
IPython, zmq and tornado, then the notebooks' first cells import hermes_nb,
pydantic and httpx. :class:`ForkServer` starts ONE helper process
(:mod:`hermes_nb.nbrun.zygote_server`) that imports all of that once — without
starting a thread, an event loop or a zmq context — and then ``fork()``s one
child per kernel on request. Each child is a fresh process (a new IPython
namespace, a new session and process group, the environment the kernelspec
gives, its own working directory, ``random`` re-seeded), so nothing a notebook
does reaches another receipt; the children share only the modules imported
before the fork, exactly as a fresh ``python -m ipykernel_launcher`` would
import them.

It is off by default: a plain smoke launches each kernel the standard way.
jupyter_client reaches it only through its documented seam — the
:class:`~hermes_nb.nbrun.fork_provisioner.ForkProvisioner`, registered under
the ``jupyter_client.kernel_provisioners`` entry point and named in the pool's
private kernelspec (``metadata.kernel_provisioner``, with this server's socket
as its config).

Protocol, over the server's Unix socket (in a 0700 directory of its own), one
connection per kernel: the provisioner sends one JSON line ``{"args", "env",
"cwd", "fds"}`` (``fds`` names the descriptors passed along with it:
``stdout``/``stderr``); the server answers ``{"pid"}`` with the child's pidfd
(SCM_RIGHTS) or ``{"error"}``, then ``{"exit": returncode}`` (Popen's
convention: ``-signal``) when it has reaped the child. The server exits when
its stdin closes — the runner closing it, or the runner gone; kernels see
their parent gone (``JPY_PARENT_PID``) and stop, as under the normal launcher.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from hermes_nb.nbrun import zygote_server

__all__ = ["FORK_ENV", "ForkServer", "ForkedProcess", "adopt", "fork_kernel", "fork_supported", "fork_wanted",
           "prestart"]

#: opt-in: ``HERMES_NB_KERNEL_FORK=1`` forks the smoke's kernels from the fork server
FORK_ENV = "HERMES_NB_KERNEL_FORK"
_ON = ("1", "true", "yes", "on")
_SOCKET = "fork.sock"


def fork_supported() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")


def fork_wanted(environ: dict[str, str] | None = None) -> bool:
    """``HERMES_NB_KERNEL_FORK=1`` (and a platform that can fork): the smoke forks its kernels."""
    value = (os.environ if environ is None else environ).get(FORK_ENV, "")
    return fork_supported() and value.strip().lower() in _ON


class ForkServer:
    """The fork server process and its socket; it imports while the caller goes on. ``close()`` ends it."""

    def __init__(self, python: str | None = None, env: dict[str, str] | None = None) -> None:
        self.python = python or sys.executable
        self._dir = Path(tempfile.mkdtemp(prefix="hermes-nb-fork-"))
        self.address = str(self._dir / _SOCKET)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)  # connections wait in the backlog until the server's imports are done
            listener.listen(64)
            self.proc = subprocess.Popen(
                [self.python, "-m", zygote_server.__name__, str(listener.fileno())],
                pass_fds=(listener.fileno(),), stdin=subprocess.PIPE, env=env, start_new_session=True)
        except OSError:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        finally:
            listener.close()
        self._closed = False

    @property
    def lost(self) -> bool:
        return self._closed or self.proc.poll() is not None

    def close(self) -> None:
        """Close its stdin: the server exits; kernels still running see their parent gone and stop."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


_prestarted: ForkServer | None = None
_prestart_lock = threading.Lock()


def prestart(env: dict[str, str] | None = None) -> None:
    """Start the fork server now, before the caller's own imports (``hermes-nb smoke`` does, first thing).

    The next ``KernelPool(fork=True)`` of this interpreter adopts it (:func:`adopt`); one never adopted is
    closed at exit. Nothing happens unless forking is wanted (:func:`fork_wanted`).
    """
    global _prestarted
    if not fork_wanted():
        return
    with _prestart_lock:
        if _prestarted is None or _prestarted.lost:
            try:
                _prestarted = ForkServer(env=env)
            except OSError:
                return
            import atexit

            atexit.register(_prestarted.close)


def adopt(python: str) -> ForkServer | None:
    """The prestarted fork server, if it runs ``python`` and is still there (it is then the caller's to close)."""
    global _prestarted
    with _prestart_lock:
        server, _prestarted = _prestarted, None
    if server is not None and (server.python != python or server.lost):
        server.close()
        server = None
    return server


# ---------------------------------------------------------------------------------------------- one kernel
class ForkedProcess:
    """The provisioner's handle on a forked kernel, with the part of ``Popen``'s API jupyter_client uses.

    Its exit status comes from the fork server (the child's parent) over the kernel's connection; its pidfd
    makes signals race-free and tells that it is gone when the server could not report it.
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int, conn: socket.socket, pidfd: int | None, pending: bytes = b"") -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._conn: socket.socket | None = conn
        self._pidfd = pidfd
        self._buf = pending  # what the server sent after the pid (its exit report, if the kernel is gone already)
        self._lock = threading.Lock()

    def __del__(self) -> None:  # closed only here: a signal sent meanwhile must never reach a reused fd number
        fd, self._pidfd = getattr(self, "_pidfd", None), None
        if fd is not None:
            os.close(fd)
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()

    def _check(self, timeout: float) -> None:
        """Take the server's exit report if it is there (waiting up to ``timeout`` for it)."""
        with self._lock:
            while self.returncode is None:
                if b"\n" in self._buf:
                    self.returncode = int(json.loads(self._buf.split(b"\n", 1)[0])["exit"])
                    return
                if self._conn is None:  # the server is gone: the pidfd says whether the kernel is
                    if self._gone(timeout):
                        self.returncode = -signal.SIGKILL  # reaped by someone else: its status is unknown
                    return
                if not _ready(self._conn, timeout):
                    return
                data = self._conn.recv(4096)
                if data:
                    self._buf += data
                else:
                    self._conn.close()  # the server went away without a report
                    self._conn = None
                timeout = 0

    def _gone(self, timeout: float) -> bool:
        if self._pidfd is not None:
            return _ready(self._pidfd, timeout)
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        time.sleep(timeout)
        return False

    def poll(self) -> int | None:
        self._check(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
            self._check(0.5 if left is None else min(left, 0.5))
        return code

    def send_signal(self, signum: int) -> None:
        if self.returncode is not None:
            return
        pidfd = self._pidfd
        try:
            if pidfd is not None and hasattr(signal, "pidfd_send_signal"):
                signal.pidfd_send_signal(pidfd, signum)  # never another process, even after a pid reuse
            else:
                os.kill(self.pid, signum)
        except ProcessLookupError:  # exited meanwhile
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _ready(fd: socket.socket | int, timeout: float) -> bool:
    """``fd`` readable (or closed) within ``timeout`` s; ``poll``, not ``select``: any descriptor number works."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


def _fileno(stream: IO[Any] | int | None) -> int | None:
    if stream is None or stream == subprocess.DEVNULL:
        return None
    return stream if isinstance(stream, int) else stream.fileno()


def fork_kernel(address: str, args: list[str], env: dict[str, str], cwd: str, *,
                stdout: IO[Any] | int | None = None, stderr: IO[Any] | int | None = None,
                timeout: float = 60.0) -> ForkedProcess:
    """Ask the fork server at ``address`` for a kernel running ``ipykernel_launcher *args`` in ``cwd`` with ``env``.

    ``stdout``/``stderr`` (a file or a descriptor, as ``Popen`` takes them) go to the kernel; by default it
    writes where the fork server does (the runner's own streams). Raises ``OSError`` when the server is
    gone, refuses or does not answer within ``timeout`` (the caller then launches the kernel the normal way).
    """
    names, fds = [], []
    for name, stream in (("stdout", stdout), ("stderr", stderr)):
        fd = _fileno(stream)
        if fd is not None:
            names.append(name)
            fds.append(fd)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(address)
        line = json.dumps({"args": list(args), "env": dict(env), "cwd": str(cwd), "fds": names}).encode() + b"\n"
        socket.send_fds(conn, [line], fds)
        reply, got, rest = _read_reply(conn)
        conn.settimeout(None)
    except (OSError, ValueError) as exc:
        conn.close()
        raise OSError(f"the kernel fork server did not answer ({exc})") from None
    if "pid" not in reply:
        conn.close()
        for fd in got:
            os.close(fd)
        raise OSError(str(reply.get("error") or "the kernel fork server refused"))
    return ForkedProcess(int(reply["pid"]), conn, got[0] if got else None, rest)


def _read_reply(conn: socket.socket) -> tuple[dict[str, Any], list[int], bytes]:
    data, got = b"", []
    while b"\n" not in data:
        chunk, fds, _flags, _addr = socket.recv_fds(conn, 65536, 1)
        got.extend(fds)
        if not chunk:
            raise ValueError("connection closed")
        data += chunk
    line, rest = data.split(b"\n", 1)
    return json.loads(line), got, rest
