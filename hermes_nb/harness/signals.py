"""SIGINT/SIGTERM/SIGHUP during a run: cancel the request, never lose the run's documents. A handler is held back
while a native module initialises (raised inside pydantic-core's init it is a panic). Loaded at CLI start-up."""

from __future__ import annotations

import importlib.machinery
import signal
import sys
import threading
from types import FrameType

TYPE_CHECKING = False  # (typing is not imported at start-up)
if TYPE_CHECKING:
    from typing import Any

#: SIGHUP too: a closed terminal must not leave latest.json "running"
SIGNAL_NAMES: dict[int, str] = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
#: set once a guard has seen a signal: the CLI's own handler then ignores later ones (the exit code is decided)
INTERRUPTED = threading.Event()
#: the main thread's native inits under way, and the first handler call held back meanwhile
_NATIVE: dict[str, Any] = {"depth": 0, "held": None}


def deferred(handler: Any, signum: int) -> bool:
    """True (and ``handler(signum)`` held back) while the main thread initialises a native module."""
    if not _NATIVE["depth"]:
        return False
    if _NATIVE["held"] is None:
        _NATIVE["held"] = (handler, signum)
    return True


def _native_init(call: Any, *args: Any) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return call(*args)
    _NATIVE["depth"] += 1
    try:
        return call(*args)
    finally:
        _NATIVE["depth"] -= 1
        held = None if _NATIVE["depth"] else _NATIVE["held"]
        if held is not None:
            _NATIVE["held"] = None
            held[0](held[1], None)


class _NativeLoader(importlib.machinery.ExtensionFileLoader):
    def create_module(self, spec: Any) -> Any:
        return _native_init(super().create_module, spec)

    def exec_module(self, module: Any) -> None:
        _native_init(super().exec_module, module)


def defer_in_native_init() -> None:
    """Load extension modules through :class:`_NativeLoader` from now on (once per process)."""
    if any(getattr(hook, "hermes_nb_native", False) for hook in sys.path_hooks):
        return
    m = importlib.machinery
    hook = m.FileFinder.path_hook((_NativeLoader, m.EXTENSION_SUFFIXES), (m.SourceFileLoader, m.SOURCE_SUFFIXES),
                                  (m.SourcelessFileLoader, m.BYTECODE_SUFFIXES))
    hook.hermes_nb_native = True  # type: ignore[attr-defined]  # marks our hook (installed once)
    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()  # the finders made before use the standard loaders


class Cancelled(BaseException):
    """Raised from a signal handler to abort the request."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """The handlers for a run's whole life cycle (main thread only). While ``armed`` a signal raises
    :class:`Cancelled`; otherwise it is kept in ``pending``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.armed = False
        self.pending: int | None = None
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if deferred(self._handler, signum):
            return
        INTERRUPTED.set()
        if self.armed:
            self.armed = False
            raise Cancelled(signum)
        self.pending = signum

    def arm(self) -> None:
        self.armed = True
        if self.pending is not None:
            self.armed = False
            raise Cancelled(self.pending)

    def __enter__(self) -> SignalGuard:
        if self.enabled:
            for signum in SIGNAL_NAMES:
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
