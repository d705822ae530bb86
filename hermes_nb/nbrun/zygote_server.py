"""The kernel fork server itself: ``python -m hermes_nb.nbrun.zygote_server FD MODULE...``.

Runs in the zygote (and, after ``fork()``, in each kernel child); the runner's
side and the protocol are in :mod:`hermes_nb.nbrun.zygote`. Only the standard
library is imported here before the preload list.
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

__all__ = ["serve"]


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.sendall(json.dumps(msg).encode() + b"\n")


def _status(wait_status: int) -> int:
    return os.waitstatus_to_exitcode(wait_status)


def serve(fd: int, preload: list[str]) -> int:
    """Import ``preload``, then fork a kernel per request until the runner closes the channel (or is gone)."""
    sock = socket.socket(fileno=fd)
    try:
        return _serve(sock, preload)
    except (BrokenPipeError, ConnectionResetError):  # the runner went away: so does the zygote
        return 0


def _serve(sock: socket.socket, preload: list[str]) -> int:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle: it kills the kernels
    loaded = []
    for name in preload:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 — a warm-up only: the kernel imports it again (and fails there, visibly)
            pass
    _send(sock, {"ready": loaded})
    children: set[int] = set()
    buf = b""
    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            _reap(sock, children)
        if sock in readable:
            data = sock.recv(65536)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                if threading.active_count() != 1:
                    _send(sock, {"id": req["id"], "error": "the fork server is not single-threaded"})
                    continue
                pid = os.fork()
                if pid == 0:  # the child never returns into this loop
                    code = 1
                    try:
                        code = _child(req, (sock, wake_r, wake_w))
                    except BaseException:  # noqa: BLE001 — before the kernel ran (a bad cwd...): say why, exit 1
                        import traceback

                        traceback.print_exc()
                    finally:
                        os._exit(code)
                children.add(pid)
                _send(sock, {"id": req["id"], "pid": pid})
        _reap(sock, children)
    return 0


def _reap(sock: socket.socket, children: set[int]) -> None:
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            children.discard(pid)
            continue
        if done:
            children.discard(pid)
            try:
                _send(sock, {"exit": pid, "status": _status(status)})
            except OSError:
                pass


def _child(req: dict[str, Any], inherited: tuple[socket.socket, int, int]) -> int:
    """In the forked child: become a fresh kernel process, then run IPKernelApp."""
    sock, wake_r, wake_w = inherited
    signal.set_wakeup_fd(-1)
    sock.close()
    os.close(wake_r)
    os.close(wake_w)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    parent = os.getppid()
    os.environ.clear()
    os.environ.update(req["env"])
    os.environ["JPY_PARENT_PID"] = str(parent)  # the kernel stops when the zygote (its parent) is gone
    os.chdir(req["cwd"])
    import random

    random.seed()
    import ipykernel_launcher

    sys.argv = [ipykernel_launcher.__file__, *req["args"]]
    code = 0
    try:
        from ipykernel import kernelapp

        # its default was read from the environment when the class was defined (in the zygote): set it here
        kernelapp.IPKernelApp.launch_instance(parent_handle=parent)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 — the kernel's own crash: print it as a normal kernel would
        import traceback

        traceback.print_exc()
        code = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


if __name__ == "__main__":
    # ipykernel_launcher drops the working directory from sys.path; so does the zygote (-m put it first)
    if sys.path and (sys.path[0] in ("", os.getcwd())):
        del sys.path[0]
    code = serve(int(sys.argv[1]), sys.argv[2:])
    sys.stderr.flush()
    os._exit(code)  # no interpreter teardown of everything preloaded: the runner is waiting for this exit
