"""The kernel fork server itself: ``python -m hermes_nb.nbrun.zygote_server FD``.

Runs in the fork server (and, after ``fork()``, in each kernel child); the
runner's side and the protocol are in :mod:`hermes_nb.nbrun.zygote`. ``FD`` is
the listening Unix socket the runner bound. Importing this module costs only
the standard library: the runner imports it for its name, and the server
imports the kernel and the notebooks' modules in :func:`preload`, after start.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import threading
from typing import Any

__all__ = ["preload", "serve"]


def preload() -> None:
    """What every kernel imports, imported once before any fork: the kernel, then the notebooks' first cells.

    Module-level state only (classes, constants): none of these starts a thread, an event loop or a zmq
    context at import, and the server checks it is still single-threaded before each fork.
    """
    import httpcore  # noqa: F401  (httpx imports it with its first client)
    import ipykernel.comm  # noqa: F401
    import ipykernel.debugger  # noqa: F401  (the kernel imports it when it starts)
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import ipykernel.zmqshell  # noqa: F401
    import IPython.display  # noqa: F401
    import jupyter_client.session  # noqa: F401

    import hermes_nb.core.resolve  # noqa: F401
    import hermes_nb.harness.run  # noqa: F401
    import hermes_nb.proxy.check  # noqa: F401
    import hermes_nb.proxy.contracts  # noqa: F401
    import hermes_nb.proxy.probe  # noqa: F401
    import hermes_nb.receipts.verdict  # noqa: F401
    import hermes_nb.wire.client  # noqa: F401


def _send(conn: socket.socket, msg: dict[str, Any], fds: list[int] | None = None) -> None:
    line = json.dumps(msg).encode() + b"\n"
    if fds:
        socket.send_fds(conn, [line], fds)
    else:
        conn.sendall(line)


class _Request:
    """A connection's request as it arrives: one JSON line and the descriptors sent with it."""

    def __init__(self) -> None:
        self.data = b""
        self.fds: list[int] = []

    def feed(self, conn: socket.socket) -> bool | None:
        """True once the line is complete; None when the peer closed first."""
        chunk, fds, _flags, _addr = socket.recv_fds(conn, 65536, 4)
        self.fds.extend(fds)
        if not chunk:
            return None
        self.data += chunk
        return b"\n" in self.data


def serve(listen_fd: int) -> tuple[str, int]:
    """Preload, then fork a kernel per request until stdin closes. ``("child", code)`` in a kernel child."""
    # the runner passes its own descriptor number, which is > 1024 when it holds many (as the whole test suite
    # does): select() cannot wait on that, so the listener moves to the lowest free number here
    listener = socket.socket(fileno=os.dup(listen_fd))
    os.close(listen_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle: it kills the kernels
    try:
        preload()
    except Exception:  # noqa: BLE001 — a warm-up only: each kernel imports what it needs (and fails there, visibly)
        pass
    pending: dict[socket.socket, _Request] = {}
    children: dict[int, socket.socket] = {}
    control = sys.stdin.fileno()
    while True:
        readable, _, _ = select.select([control, listener, wake_r, *pending], [], [])
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(children)
        if control in readable and not os.read(control, 512):
            return "server", 0  # the runner closed the channel (or is gone)
        if listener in readable:
            conn, _ = listener.accept()
            pending[conn] = _Request()
        for conn in [c for c in readable if c in pending]:
            req = pending[conn]
            try:
                done = req.feed(conn)
            except OSError:
                done = None
            if not done:
                if done is None:
                    del pending[conn]
                    _close(conn, req.fds)
                continue
            del pending[conn]
            if threading.active_count() != 1:
                _refuse(conn, req.fds, "the fork server is not single-threaded")
                continue
            pid = os.fork()
            if pid == 0:  # the kernel child: never back into this loop
                inherited = [listener, *pending, *children.values()]
                return "child", _child(req, conn, inherited, (control, wake_r, wake_w))
            for fd in req.fds:
                os.close(fd)
            try:
                pidfd = [os.pidfd_open(pid)] if hasattr(os, "pidfd_open") else []
            except OSError:
                pidfd = []
            try:
                _send(conn, {"pid": pid}, pidfd)
                children[pid] = conn
            except OSError:  # the provisioner went away: the kernel is nobody's; stop it
                os.kill(pid, signal.SIGKILL)
                children[pid] = conn
            for fd in pidfd:
                os.close(fd)


def _refuse(conn: socket.socket, fds: list[int], why: str) -> None:
    try:
        _send(conn, {"error": why})
    except OSError:
        pass
    _close(conn, fds)


def _close(conn: socket.socket, fds: list[int]) -> None:
    conn.close()
    for fd in fds:
        os.close(fd)


def _reap(children: dict[int, socket.socket]) -> None:
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done:
            conn = children.pop(pid)
            try:
                _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
            except (OSError, ValueError):
                pass
            conn.close()


def _child(req: _Request, conn: socket.socket, inherited: list[socket.socket], fds: tuple[int, int, int]) -> int:
    """In the forked child: become a fresh kernel process, then run IPKernelApp; its exit code."""
    try:
        spec = json.loads(req.data.split(b"\n", 1)[0])
        signal.set_wakeup_fd(-1)
        for sock in (conn, *inherited):
            sock.close()
        for fd in fds:
            os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for name, fd in zip(spec.get("fds", []), req.fds, strict=False):
            os.dup2(fd, {"stdout": 1, "stderr": 2}[name])
            os.close(fd)
        parent = os.getppid()
        os.environ.clear()
        os.environ.update(spec["env"])
        os.environ["JPY_PARENT_PID"] = str(parent)  # the kernel stops when the server (its parent) is gone
        os.chdir(spec["cwd"])
        import random

        random.seed()
        import ipykernel_launcher
        from ipykernel import kernelapp

        sys.argv = [ipykernel_launcher.__file__, *spec["args"]]
    except BaseException:  # noqa: BLE001 — before the kernel ran (a bad cwd...): say why, exit 1
        import traceback

        traceback.print_exc()
        return 1
    try:
        # its default was read from the environment when the class was defined (in the server): set it here
        kernelapp.IPKernelApp.launch_instance(parent_handle=parent)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def main() -> None:
    # ipykernel_launcher drops the working directory from sys.path; so does the server (-m put it first)
    if sys.path and (sys.path[0] in ("", os.getcwd())):
        del sys.path[0]
    role, code = serve(int(sys.argv[1]))
    if role == "child":
        sys.exit(code)  # a kernel ends as a launched one does: atexit handlers, flushed streams, then exit
    sys.stderr.flush()
    os._exit(code)  # the server skips the teardown of everything it preloaded: the runner waits for this exit


if __name__ == "__main__":
    main()
