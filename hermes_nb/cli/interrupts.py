"""Ctrl-C and SIGTERM for the ``hermes-nb`` program, from its first line: the first one raises ``KeyboardInterrupt``
(every cleanup runs) and the program exits 128 + the signal with one line; later ones are ignored. Held back during
a native module's init (inside pydantic-core's it would become a pyo3 panic)."""

import os
import signal
import sys
import threading
from types import FrameType

from hermes_nb.harness.signals import INTERRUPTED, defer_in_native_init, deferred

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state: dict[str, object] = {"armed": False, "pending": False, "signum": None}


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """The first one raises KeyboardInterrupt in :func:`hermes_nb.cli.app.main` (or as soon as it arms)."""
    if deferred(on_sigint, signum) or INTERRUPTED.is_set():  # held back while a native module initialises
        return
    INTERRUPTED.set()
    _state["signum"] = signum
    if _state["armed"]:
        raise KeyboardInterrupt
    _state["pending"] = True


def exit_code() -> int:
    signum = _state["signum"]
    return 128 + (signum if isinstance(signum, int) else int(signal.SIGINT))


def arm() -> None:
    """main is ready to handle KeyboardInterrupt: deliver a Ctrl-C that came during start-up."""
    _state["armed"] = True
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


def disarm() -> None:
    """The result is decided: from now on a signal changes nothing."""
    _state["armed"] = False
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def is_program() -> bool:
    """True when this process is ``hermes-nb`` itself (the console script, or ``python -m hermes_nb.cli``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    return argv0 == "-m" or os.path.basename(argv0) in ("hermes-nb", "hermes-nb.exe") \
        or argv0.replace("\\", "/").endswith("hermes_nb/cli/__main__.py")


def install() -> None:
    """Own SIGINT and SIGTERM (main thread only), never raising inside a native module's init."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, on_sigint)
        defer_in_native_init()
