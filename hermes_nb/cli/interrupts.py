"""Ctrl-C and SIGTERM for the ``hermes-nb`` program: the first one interrupts, later ones are ignored.

Installed as early as the program's own code runs (``hermes_nb/cli/__init__.py`` when it is the
program, then :func:`hermes_nb.cli.app.main`; ``import hermes_nb`` before it imports nothing), so an
interrupt during start-up is one line and exit 128 + the signal (130 for SIGINT, 143 for SIGTERM), never
a traceback. A SIGTERM is handled like a Ctrl-C (raised as ``KeyboardInterrupt``, so every cleanup runs:
a run's sandbox copy, temporary directories), only the exit code differs. A run's or a smoke's
:class:`~hermes_nb.harness.signals.SignalGuard` takes over while it works and sets the same flag, so a
second signal never changes the exit code it decided. A native module's init runs with the handler held
back (:func:`~hermes_nb.harness.signals.defer_in_native_init`): raised inside pydantic-core's, a
``KeyboardInterrupt`` becomes a pyo3 panic. What comes before our first line (the interpreter's
start, ``site``, and the console script's own ``import re``) is CPython's: a signal there can still print
CPython's traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from hermes_nb.harness.signals import INTERRUPTED, defer_in_native_init, deferred

__all__ = ["install", "is_program", "on_sigint", "arm", "disarm", "exit_code", "SIGNALS"]

#: the signals the program owns: Ctrl-C, and what a CI runner or a service manager sends to stop it
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state: dict[str, object] = {"armed": False, "pending": False, "signum": None}


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT/SIGTERM raises KeyboardInterrupt inside :func:`hermes_nb.cli.app.main` (or, when it comes
    before main is running, as soon as main arms); later ones are ignored (the first one's code stands)."""
    if deferred(on_sigint, signum) or INTERRUPTED.is_set():  # held back while a native module initialises
        return
    INTERRUPTED.set()
    _state["signum"] = signum
    if _state["armed"]:
        raise KeyboardInterrupt
    _state["pending"] = True


def exit_code() -> int:
    """128 + the signal that interrupted the program (130 for Ctrl-C, 143 for SIGTERM)."""
    signum = _state["signum"]
    return 128 + (signum if isinstance(signum, int) else int(signal.SIGINT))


def arm() -> None:
    """main is ready to handle KeyboardInterrupt: deliver a Ctrl-C that came during start-up."""
    _state["armed"] = True
    if _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


def disarm() -> None:
    """The result is decided: from now on Ctrl-C changes nothing."""
    _state["armed"] = False
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def is_program() -> bool:
    """True when this process is ``hermes-nb`` itself (the console script, or ``python -m hermes_nb.cli``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == "-m":  # python -m hermes_nb.cli, while the package is imported
        return True
    name = os.path.basename(argv0)
    return name in ("hermes-nb", "hermes-nb.exe") or argv0.replace("\\", "/").endswith("hermes_nb/cli/__main__.py")


def install() -> None:
    """Own SIGINT and SIGTERM (main thread only), never raising inside a native module's init."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, on_sigint)
        defer_in_native_init()
