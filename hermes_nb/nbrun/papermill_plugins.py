"""Our papermill plug-ins, registered through papermill's documented entry points (``pyproject.toml``).

* :class:`MemoryHandler` (``papermill.io``, scheme ``hermes-nb-mem://``): papermill writes
  an executed notebook here instead of to disk, so nothing unredacted touches the
  disk before :mod:`hermes_nb.receipts` has redacted and scanned it.
* :class:`KeepingEngine` (``papermill.engine``, name ``hermes-nb``): papermill's
  nbclient engine, leaving the notebook it executes in :data:`EXECUTING` for the
  worker thread. After a timeout or a dead kernel papermill writes nothing; the
  runner then takes the notebook from there, so the receipt still shows every
  output up to the failure.

Nothing here imports papermill at import time: papermill loads these entry
points while it is itself being imported, and the runner's threads start
their kernels before papermill is imported.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

__all__ = ["MEM_SCHEME", "ENGINE_NAME", "EXECUTING", "MemoryHandler", "KeepingEngine"]

MEM_SCHEME = "hermes-nb-mem://"
ENGINE_NAME = "hermes-nb"
#: per worker thread: the notebook papermill's engine is executing (``.nb``)
EXECUTING = threading.local()


class MemoryHandler:
    """papermill I/O handler keeping executed notebooks in memory (keyed by path)."""

    store: dict[str, str] = {}
    lock = threading.Lock()

    @classmethod
    def read(cls, path: str) -> str:
        with cls.lock:
            return cls.store[path]

    @classmethod
    def write(cls, buf: str, path: str) -> None:
        with cls.lock:
            cls.store[path] = buf

    @classmethod
    def pop(cls, path: str) -> str | None:
        with cls.lock:
            return cls.store.pop(path, None)

    @classmethod
    def listdir(cls, path: str) -> list[str]:
        return []

    @classmethod
    def pretty_path(cls, path: str) -> str:
        return path


@functools.cache
def _nbclient_engine() -> Any:
    """papermill's nbclient engine with ``execute_managed_notebook`` recording the notebook (built once)."""
    from papermill.engines import NBClientEngine

    class _Keeping(NBClientEngine):  # type: ignore[misc, valid-type]
        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, **kwargs: Any) -> Any:
            EXECUTING.nb = nb_man.nb
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    return _Keeping


class KeepingEngine:
    """The engine papermill finds under :data:`ENGINE_NAME`: the three calls papermill makes on an engine."""

    @classmethod
    def execute_notebook(cls, nb: Any, kernel_name: str, **kwargs: Any) -> Any:
        return _nbclient_engine().execute_notebook(nb, kernel_name, **kwargs)

    @classmethod
    def nb_kernel_name(cls, nb: Any, name: str | None = None) -> str:
        return str(_nbclient_engine().nb_kernel_name(nb, name))

    @classmethod
    def nb_language(cls, nb: Any, language: str | None = None) -> str:
        return str(_nbclient_engine().nb_language(nb, language))
