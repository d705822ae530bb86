"""Ctrl-C for the ``hermes-nb`` program: the first one interrupts, later ones are ignored.

Installed as early as the program's own code runs (``hermes_nb/cli/__init__.py`` when it is the
program, then :func:`hermes_nb.cli.app.main`), so an interrupt during start-up is one line and exit
130, never a traceback. A run's :class:`~hermes_nb.harness.signals.SignalGuard` takes over during the
run and sets the same flag, so a second Ctrl-C never changes the exit code the run decided.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

from hermes_nb.harness.signals import INTERRUPTED

__all__ = ["install", "is_program", "on_sigint", "arm", "disarm"]

_state = {"armed": False, "pending": False}


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """The first Ctrl-C raises KeyboardInterrupt inside :func:`hermes_nb.cli.app.main` (or, when it comes
    before main is running, as soon as main arms); later ones are ignored (the first one's code stands)."""
    if INTERRUPTED.is_set():
        return
    INTERRUPTED.set()
    if _state["armed"]:
        raise KeyboardInterrupt
    _state["pending"] = True


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
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def is_program() -> bool:
    """True when this process is ``hermes-nb`` itself (the console script, or ``python -m hermes_nb.cli``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == "-m":  # python -m hermes_nb.cli, while the package is imported
        return True
    name = os.path.basename(argv0)
    return name in ("hermes-nb", "hermes-nb.exe") or argv0.replace("\\", "/").endswith("hermes_nb/cli/__main__.py")


def install() -> None:
    """Own SIGINT (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_sigint)
