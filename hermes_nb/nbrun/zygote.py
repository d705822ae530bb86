"""A fork server ("zygote") for kernels: import ipykernel and the notebooks' modules once, fork each kernel.

Every kernel of a smoke run pays the same start-up: ~0.38 s CPU of ipykernel,
IPython, zmq and tornado imports, then the notebooks' first cell imports
hermes_nb, pydantic, httpx and aiohttp (~0.4 s). :class:`Zygote` starts ONE
helper process (``python -m hermes_nb.nbrun.zygote_server``) that imports all of that
once — without starting a thread, an event loop or a zmq context — and then
``fork()``s one child per kernel on request. Each child is a fresh process
(a new IPython namespace, a new session and process group, the environment
the kernelspec gives, its own working directory, ``random`` re-seeded), so
nothing a notebook does reaches another receipt; the only thing the children
share is the modules imported before the fork, exactly as a fresh
``python -m ipykernel_launcher`` would import them.

Fork safety: the zygote checks it is single-threaded before every fork and
refuses otherwise (the runner then launches that kernel the normal way). It
reaps its children and reports each exit status to the runner; the kernel's
``JPY_PARENT_PID`` is the zygote, which exits when the runner closes the
channel (or dies), so orphaned kernels stop as they do under the normal
launcher. Linux/POSIX only (``os.fork``); :func:`fork_supported` says whether
it can be used. What runs in the zygote and in each child:
:mod:`hermes_nb.nbrun.zygote_server`; the jupyter_client side:
:mod:`hermes_nb.nbrun.fork_provisioner`.

Protocol: newline-delimited JSON over a socketpair. Runner → zygote:
``{"id", "args", "env", "cwd"}``; zygote → runner: ``{"ready": [modules]}``
once, ``{"id", "pid"}`` or ``{"id", "error"}`` per request, and
``{"exit": pid, "status": returncode}`` (Popen's convention: ``-signal``) per
reaped child.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["FORK_ENV", "PRELOAD", "ForkedProcess", "Zygote", "ZygoteError", "adopt", "fork_supported", "fork_wanted",
           "prestart"]

#: opt-out: ``HERMES_NB_KERNEL_FORK=0`` launches every kernel the normal way
FORK_ENV = "HERMES_NB_KERNEL_FORK"

#: imported by the zygote before it forks: the kernel itself, then what the notebooks' first cells import
#: (by name: a warm-up of the import cache, not a use — the zygote never calls them)
PRELOAD = (
    "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.comm", "IPython.display",
    "jupyter_client.session", "hermes_nb.kit", "hermes_nb.kit.display", "hermes_nb.proxy.contracts",
    "hermes_nb.proxy.probe", "hermes_nb.proxy.check", "hermes_nb.harness.run", "hermes_nb.receipts.verdict",
    "hermes_nb.emulator", "aiohttp.web", "ipykernel.debugger", "psutil",
)


class ZygoteError(RuntimeError):
    """The zygote cannot fork this kernel (gone, refused, or too slow): launch it the normal way."""


def fork_supported() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def fork_wanted() -> bool:
    """The smoke's default: fork kernels where supported, unless ``HERMES_NB_KERNEL_FORK=0``."""
    return fork_supported() and os.environ.get(FORK_ENV, "1").strip() not in ("0", "false", "no", "off")


_prestarted: "Zygote | None" = None
_prestart_lock = threading.Lock()


def prestart(env: dict[str, str] | None = None) -> None:
    """Start the fork server now, before the caller's own imports (``hermes-nb smoke`` does, first thing).

    The next ``KernelPool(fork=True)`` of this interpreter adopts it (:func:`adopt`); one never adopted is
    closed at exit. Nothing happens where forking is unsupported or opted out.
    """
    global _prestarted
    if not fork_wanted():
        return
    with _prestart_lock:
        if _prestarted is None or _prestarted.lost:
            try:
                _prestarted = Zygote(env=env)
            except OSError:
                return
            import atexit

            atexit.register(_prestarted.close)


def adopt(python: str) -> "Zygote | None":
    """The prestarted fork server, if it runs ``python`` and is still there (it is then the caller's to close)."""
    global _prestarted
    with _prestart_lock:
        zygote, _prestarted = _prestarted, None
    if zygote is not None and (zygote.python != python or zygote.lost):
        zygote.close()
        zygote = None
    return zygote


# ---------------------------------------------------------------------------------------------- runner side
class ForkedProcess:
    """The runner's handle on a forked kernel, with the part of ``Popen``'s API jupyter_client uses."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, zygote: "Zygote") -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._zygote = zygote
        self._exited = threading.Event()
        try:
            self._pidfd: int | None = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        except OSError:  # already reaped
            self._pidfd = None

    def _set_exit(self, status: int) -> None:
        self.returncode = status
        self._exited.set()

    def __del__(self) -> None:  # closed only here: a signal sent meanwhile must never reach a reused fd number
        fd, self._pidfd = getattr(self, "_pidfd", None), None
        if fd is not None:
            os.close(fd)

    def poll(self) -> int | None:
        if self.returncode is None and self._zygote.lost and self._gone():
            self._set_exit(-signal.SIGKILL)  # the zygote that would have reported it is gone: status unknown
        return self.returncode

    def _gone(self) -> bool:
        if self._pidfd is not None:
            return bool(select.select([self._pidfd], [], [], 0)[0])
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
            self._exited.wait(0.05 if left is None else min(left, 0.05))
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        if self.poll() is not None:
            return
        pidfd = self._pidfd
        if pidfd is not None and hasattr(signal, "pidfd_send_signal"):
            try:
                signal.pidfd_send_signal(pidfd, signum)
                return
            except OSError:  # exited and reaped meanwhile, or the fd was closed: fall back
                pass
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """Starts the fork server at once (it imports while the caller goes on); :meth:`spawn` forks a kernel."""

    def __init__(self, python: str | None = None, preload: tuple[str, ...] = PRELOAD,
                 env: dict[str, str] | None = None) -> None:
        self.python = python or sys.executable
        ours, theirs = socket.socketpair()
        self._sock = ours
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self._procs: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._next_id = 0
        self.lost = False
        self._closed = False
        self.preloaded: list[str] | None = None
        try:
            self.proc = subprocess.Popen(
                [self.python, "-m", "hermes_nb.nbrun.zygote_server", str(theirs.fileno()), *preload],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        finally:
            theirs.close()
        self._reader = threading.Thread(target=self._read, name="hermes-nb-zygote", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._dispatch(json.loads(line))
        except (OSError, ValueError):
            pass
        with self._cond:
            self.lost = True
            self._cond.notify_all()

    def _dispatch(self, msg: dict[str, Any]) -> None:
        with self._cond:
            if "exit" in msg:
                proc = self._procs.pop(msg["exit"], None)
                if proc is None:
                    self._early_exits[msg["exit"]] = msg["status"]
                else:
                    proc._set_exit(msg["status"])
            elif "ready" in msg:
                self.preloaded = list(msg["ready"])
            else:
                self._replies[msg["id"]] = msg
            self._cond.notify_all()

    def spawn(self, args: list[str], env: dict[str, str], cwd: str, timeout: float = 60.0) -> ForkedProcess:
        """Fork a kernel running ``ipykernel_launcher *args`` in ``cwd`` with exactly ``env``."""
        with self._cond:
            if self.lost:
                raise ZygoteError("the kernel fork server is gone")
            self._next_id += 1
            req_id = self._next_id
        line = json.dumps({"id": req_id, "args": list(args), "env": dict(env), "cwd": str(cwd)}).encode() + b"\n"
        try:
            with self._send_lock:
                self._sock.sendall(line)
        except OSError as exc:
            raise ZygoteError(f"the kernel fork server is gone ({exc})") from None
        deadline = time.monotonic() + timeout
        with self._cond:
            while req_id not in self._replies:
                left = deadline - time.monotonic()
                if self.lost or left <= 0:
                    raise ZygoteError("the kernel fork server did not answer")
                self._cond.wait(left)
            reply = self._replies.pop(req_id)
            if "pid" not in reply:
                raise ZygoteError(str(reply.get("error") or "the kernel fork server refused"))
            proc = ForkedProcess(reply["pid"], self)
            early = self._early_exits.pop(proc.pid, None)
            if early is None:
                self._procs[proc.pid] = proc
            else:
                proc._set_exit(early)
            return proc

    def close(self) -> None:
        """Close the channel: the zygote exits; kernels still running see their parent gone and stop."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
