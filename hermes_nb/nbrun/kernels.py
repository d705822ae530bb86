"""Kernels for headless runs: a private kernelspec bound to this interpreter, quiet and encrypted.

``KernelPool`` writes one kernelspec (``hermes-nb-python``) whose argv is
``sys.executable -m ipykernel_launcher``, into a private directory read by
its own :class:`~jupyter_client.kernelspec.KernelSpecManager`: no
``JUPYTER_PATH`` mutation, and "kernel not found" or "wrong environment"
cannot happen. Each notebook gets a fresh kernel (never shared between
receipts); kernels are started concurrently by the caller's threads
(:meth:`KernelPool.start`), or launched ahead, one per notebook, before the
caller's own set-up (:meth:`KernelPool.launch_ahead`, the smoke's default:
the kernels boot while the runner resolves its config, imports papermill and
starts the notebooks' emulators).

Quiet at the source: ``JUPYTER_PLATFORM_DIRS=1`` (jupyter_core's
platformdirs deprecation), ``PYDEVD_DISABLE_FILE_VALIDATION=1`` (debugpy's
frozen-modules note), and CurveZMQ transport encryption when pyzmq has it
(ipykernel 7.4 warns "running over TCP without encryption" otherwise), IPC
transport as the fallback.

Hermetic: ``IPYTHONDIR`` points into the pool's private directory, so the
user's IPython profile (startup scripts, config) cannot change what a
receipt's notebook does, and nothing is written to ``~/.ipython``; the
history database is off (``--HistoryManager.enabled=False``). Both also trim
kernel start-up (~0.1 s each kernel: no sqlite history, no user config). Each
kernel imports the kit's common modules as it starts (:mod:`hermes_nb.kit.warm`,
through IPython's ``exec_lines``), while the runner is still importing
papermill: the notebook's first cell then finds them loaded.

A kernel's stderr goes to a file of the pool, copied to this process's stderr
once the kernel has stopped: when a kernel dies before it is ready, its last
lines say why, and a kernel that could not bind a port jupyter_client picked
for it ("Address already in use": another process took the port meanwhile) is
recognised, so the caller can start it once more with fresh ports
(:meth:`StartedKernel.port_collision`).

``KernelPool(fork=True)`` (opt-in: ``HERMES_NB_KERNEL_FORK=1``) starts a kernel
fork server at once (:mod:`hermes_nb.nbrun.zygote`) and names it in the
kernelspec (``metadata.kernel_provisioner``: the ``hermes-nb-fork`` provisioner
of :mod:`hermes_nb.nbrun.fork_provisioner`, registered under jupyter_client's
``jupyter_client.kernel_provisioners`` entry point) — still a fresh process per
notebook, with the same argv, env and cwd.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = ["KERNEL_NAME", "QUIET_ENV", "KERNEL_ARGS", "KernelPool", "StartedKernel", "zygote_env"]

KERNEL_NAME = "hermes-nb-python"
QUIET_ENV = {"JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
#: no history database; and the kit's common modules imported at start-up, while the runner prepares the notebook
#: (IPython's ``exec_lines``: :mod:`hermes_nb.kit.warm`; the line leaves no name behind)
KERNEL_ARGS = ("--HistoryManager.enabled=False",
               '--IPKernelApp.exec_lines=["import hermes_nb.kit.warm as _hermes_nb_warm; del _hermes_nb_warm"]')
#: what a kernel prints when a port picked for it was taken before it could bind it (errno EADDRINUSE)
PORT_TAKEN = "Address already in use"
_PROVISIONERS = "jupyter_client.kernel_provisioners"


def zygote_env() -> dict[str, str]:
    """The kernel fork server's environment: this one, quiet (each kernel still gets exactly its spec's env)."""
    return {**os.environ, **QUIET_ENV}


def _fork_provisioner_installed() -> bool:
    from hermes_nb.nbrun.fork_provisioner import PROVISIONER_NAME

    return bool(entry_points(group=_PROVISIONERS, name=PROVISIONER_NAME))


@dataclass
class StartedKernel:
    """A kernel :meth:`KernelPool.start` launched: its manager and the file its stderr goes to."""

    manager: Any
    stderr_path: Path
    _stopped: bool = False

    @property
    def launch(self) -> str:
        """How it started, as receipts record it: ``fork-server`` or ``process``."""
        return "fork-server" if getattr(self.manager.provisioner, "forked", False) else "process"

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def last_words(self, lines: int = 3) -> str:
        """The last non-empty lines the kernel wrote to stderr (why it died), one line."""
        text = [line.strip() for line in self.stderr_text().splitlines() if line.strip()]
        return " | ".join(text[-lines:])

    def port_collision(self) -> bool:
        """It died because a port chosen for it was already taken (worth one more start with fresh ports)."""
        return PORT_TAKEN in self.stderr_text()

    def stop(self) -> None:
        """Kill it if it runs, then copy what it wrote to stderr to ours (nothing of it is lost); once."""
        from jupyter_core.utils import run_sync

        if self._stopped:
            return
        self._stopped = True
        try:
            # the clients made from its manager (nbclient's: it leaves a client of a manager it was handed
            # running): their channels, heartbeat thread and zmq context would outlive the run otherwise
            for client in getattr(self.manager, "clients", ()):
                client.stop_channels()
            if self.manager.has_kernel:
                run_sync(_kill_now)(self.manager)
        finally:
            text = self.stderr_text()
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()


async def _kill_now(km: Any) -> None:
    """``shutdown_kernel(now=True)``, without its 0.1 s poll: SIGKILL the kernel's process group through its
    provisioner and wait for the process itself, so the manager finds it gone at its first look."""
    import asyncio

    provisioner = km.provisioner
    process = getattr(provisioner, "process", None)
    if process is not None:
        await provisioner.kill()
        try:
            await asyncio.to_thread(process.wait, 5)
        except Exception:  # noqa: BLE001 — still there (or no such process): the manager's own shutdown decides
            pass
    await km.shutdown_kernel(now=True)


class KernelPool:
    """Creates kernel managers bound to ``sys.executable``; ``close()`` removes the private spec dir."""

    def __init__(self, python: str | None = None, fork: bool = False) -> None:
        self.python = python or sys.executable
        self.fork_server: Any = None
        if fork:
            from hermes_nb.nbrun.zygote import ForkServer, adopt, fork_supported

            if fork_supported() and _fork_provisioner_installed():
                try:
                    self.fork_server = adopt(self.python) or ForkServer(self.python, env=zygote_env())
                except OSError:  # no such interpreter, or no socket: the normal launch reports it per notebook
                    self.fork_server = None
        self._dir = Path(tempfile.mkdtemp(prefix="hermes-nb-kernels-"))
        spec_dir = self._dir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        metadata: dict[str, Any] = {"supported_encryption": ["curve"]}
        if self.fork_server is not None:
            from hermes_nb.nbrun.fork_provisioner import PROVISIONER_NAME

            metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME,
                                              "config": {"server": self.fork_server.address, "python": self.python}}
        spec = {
            "argv": [self.python, "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_ARGS],
            "display_name": "Python 3 (hermes-nb)",
            "language": "python",
            "metadata": metadata,
            # TMPDIR: a kernel's temporary files (a run's sandbox copy) go with this dir, even if the kernel is killed
            "env": {**QUIET_ENV, "IPYTHONDIR": str(self._dir / "ipython"), "TMPDIR": str(self._dir / "tmp")},
        }
        (self._dir / "tmp").mkdir()
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        self.spec_dirs = [str(self._dir / "kernels")]
        self.cancelled = threading.Event()
        self._managers: list[Any] = []
        self._ahead: dict[str, StartedKernel] = {}
        self._lock = threading.Lock()

    def launch_ahead(self, cwds: Sequence[Path | str]) -> None:
        """Launch one fresh kernel per working directory now, in this thread; :meth:`start` of that directory then
        takes it instead of launching another. The kernels boot while the caller does its own set-up."""
        for cwd in cwds:
            kernel = self._launch(cwd)
            with self._lock:
                self._ahead[str(cwd)] = kernel

    def start(self, cwd: Path | str) -> StartedKernel:
        """A fresh kernel in ``cwd``: the one :meth:`launch_ahead` launched there (once), else one launched now
        (from a worker thread); it is :meth:`track`-ed for :meth:`cancel`."""
        with self._lock:
            kernel = self._ahead.pop(str(cwd), None)
        return kernel if kernel is not None else self._launch(cwd)

    def _launch(self, cwd: Path | str) -> StartedKernel:
        from jupyter_core.utils import run_sync

        km = self.manager_class()(kernel_name=KERNEL_NAME)
        fd, name = tempfile.mkstemp(prefix="kernel-", suffix=".stderr", dir=self._dir)
        kernel = StartedKernel(km, Path(name))
        try:
            with os.fdopen(fd, "wb") as stderr:  # the kernel has its own copy once launched
                run_sync(km.start_kernel)(cwd=str(cwd), stderr=stderr)
        except BaseException:
            kernel.stop()
            raise
        self.track(km)
        return kernel

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
        """An ``AsyncKernelManager`` bound to the private spec (nbclient creates and owns it): trait defaults only."""
        import zmq
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
        from traitlets import List, default

        spec_dirs = list(self.spec_dirs)
        curve = bool(zmq.has("curve"))

        class HermesNbKernelManager(AsyncKernelManager):
            #: the clients made from this manager (:class:`ReadyClient` adds itself), stopped with the kernel
            clients: List[Any] = List()

            @default("kernel_spec_manager")
            def _private_specs(self) -> KernelSpecManager:
                return KernelSpecManager(kernel_dirs=spec_dirs, ensure_native_kernel=False)

            @default("transport_encryption")
            def _encrypt(self) -> str:
                return "auto" if curve else "disabled"

            @default("transport")
            def _transport(self) -> str:
                return "tcp" if curve else "ipc"

            @default("client_factory")
            def _ready_client(self) -> type:
                from hermes_nb.nbrun.kernel_client import ReadyClient

                return ReadyClient

        return HermesNbKernelManager

    def describe(self) -> dict[str, Any]:
        return {"name": KERNEL_NAME, "python": self.python,
                "argv": ["<python>", "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_ARGS]}

    def close(self) -> None:
        """Stop the kernels launched ahead that nobody took, stop the fork server, remove the private directory."""
        with self._lock:
            unclaimed, self._ahead = list(self._ahead.values()), {}
        for kernel in unclaimed:
            kernel.stop()
        if self.fork_server is not None:
            self.fork_server.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> KernelPool:
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
