"""Kernels for headless runs: a private kernelspec bound to this interpreter, quiet and encrypted.

``KernelPool`` writes one kernelspec (``hermes-nb-python``) whose argv is
``sys.executable -m ipykernel_launcher``, into a private directory read by
its own :class:`~jupyter_client.kernelspec.KernelSpecManager`: no
``JUPYTER_PATH`` mutation, and "kernel not found" or "wrong environment"
cannot happen. Each notebook gets a fresh kernel (never shared between
receipts); kernels are started concurrently by the caller's threads.

Quiet at the source: ``JUPYTER_PLATFORM_DIRS=1`` (jupyter_core's
platformdirs deprecation), ``PYDEVD_DISABLE_FILE_VALIDATION=1`` (debugpy's
frozen-modules note), and CurveZMQ transport encryption when pyzmq has it
(ipykernel 7.4 warns "running over TCP without encryption" otherwise), IPC
transport as the fallback.

Hermetic: ``IPYTHONDIR`` points into the pool's private directory, so the
user's IPython profile (startup scripts, config) cannot change what a
receipt's notebook does, and nothing is written to ``~/.ipython``; the
history database is off (``--HistoryManager.enabled=False``). Both also trim
kernel start-up (~0.1 s each kernel: no sqlite history, no user config).

``KernelPool(fork=True)`` (the smoke's default on Linux, ``HERMES_NB_KERNEL_FORK=0``
opts out) starts a kernel fork server at once (:mod:`hermes_nb.nbrun.zygote`):
it imports ipykernel and the notebooks' modules while the runner goes on, and
each kernel is then forked from it (:mod:`hermes_nb.nbrun.fork_provisioner`)
— still a fresh process per notebook, with the same argv, env and cwd.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["KERNEL_NAME", "QUIET_ENV", "KERNEL_ARGS", "KernelPool", "zygote_env"]

KERNEL_NAME = "hermes-nb-python"
QUIET_ENV = {"JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
KERNEL_ARGS = ("--HistoryManager.enabled=False",)


def zygote_env() -> dict[str, str]:
    """The kernel fork server's environment: this one, quiet (each kernel still gets exactly its spec's env)."""
    return {**os.environ, **QUIET_ENV}


class KernelPool:
    """Creates kernel managers bound to ``sys.executable``; ``close()`` removes the private spec dir."""

    def __init__(self, python: str | None = None, fork: bool = False) -> None:
        self.python = python or sys.executable
        self.zygote: Any = None
        if fork:
            from hermes_nb.nbrun.zygote import Zygote, adopt, fork_supported

            if fork_supported():
                try:
                    self.zygote = adopt(self.python) or Zygote(self.python, env=zygote_env())
                except OSError:  # no such interpreter: the normal launch reports it per notebook
                    self.zygote = None
        self._dir = Path(tempfile.mkdtemp(prefix="hermes-nb-kernels-"))
        spec_dir = self._dir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        spec = {
            "argv": [self.python, "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_ARGS],
            "display_name": "Python 3 (hermes-nb)",
            "language": "python",
            "metadata": {"supported_encryption": ["curve"]},
            # TMPDIR: a kernel's temporary files (a run's sandbox copy) go with this dir, even if the kernel is killed
            "env": {**QUIET_ENV, "IPYTHONDIR": str(self._dir / "ipython"), "TMPDIR": str(self._dir / "tmp")},
        }
        (self._dir / "tmp").mkdir()
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        self.spec_dirs = [str(self._dir / "kernels")]
        self.cancelled = threading.Event()
        self._managers: list[Any] = []
        self._lock = threading.Lock()

    def track(self, km: Any) -> None:
        """Remember a started kernel so :meth:`cancel` can stop it (killed at once if already cancelled)."""
        with self._lock:
            self._managers.append(km)
        if self.cancelled.is_set():
            _kill(km)

    def cancel(self) -> None:
        """Ctrl-C: kill every kernel of this pool; the notebooks then end as ``interrupted``."""
        self.cancelled.set()
        with self._lock:
            managers = list(self._managers)
        for km in managers:
            _kill(km)

    def manager_class(self) -> type:
        """An ``AsyncKernelManager`` subclass bound to the private spec (nbclient creates and owns it)."""
        import zmq
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
        from traitlets import default

        spec_dirs = list(self.spec_dirs)
        curve = bool(zmq.has("curve"))
        zygote = self.zygote

        class HermesNbKernelManager(AsyncKernelManager):
            async def _async_pre_start_kernel(self, **kw: Any) -> Any:
                if zygote is not None and self.provisioner is None:  # jupyter_client keeps a provisioner set here
                    import uuid

                    from hermes_nb.nbrun.fork_provisioner import ForkProvisioner

                    self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
                    provisioner = ForkProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
                    provisioner.zygote = zygote
                    self.provisioner = provisioner
                return await super()._async_pre_start_kernel(**kw)

            @default("kernel_spec_manager")
            def _private_specs(self) -> KernelSpecManager:
                return KernelSpecManager(kernel_dirs=spec_dirs, ensure_native_kernel=False)

            @default("client_factory")
            def _quick_client(self) -> type:
                from hermes_nb.nbrun.kernel_client import QuickReadyClient

                return QuickReadyClient

            @default("transport_encryption")
            def _encrypt(self) -> str:
                return "auto" if curve else "disabled"

            @default("transport")
            def _transport(self) -> str:
                return "tcp" if curve else "ipc"

        return HermesNbKernelManager

    def describe(self) -> dict[str, Any]:
        return {"name": KERNEL_NAME, "python": self.python,
                "argv": ["<python>", "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_ARGS]}

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "KernelPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill(km: Any) -> None:
    """SIGKILL the kernel process (thread-safe: only ``Popen.kill``; its manager's thread reaps it)."""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    if process is not None:
        try:
            process.kill()
        except OSError:  # already gone
            pass
