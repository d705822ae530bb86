"""Fresh kernels for headless runs, from one plain kernelspec bound to this interpreter; quiet and hermetic.

:class:`KernelPool` writes one kernelspec (``hermes-nb-python``: this interpreter's ``-m ipykernel_launcher``)
into a private directory read by its own :class:`~jupyter_client.kernelspec.KernelSpecManager`: "kernel not
found" or "wrong environment" cannot happen, and no ``JUPYTER_PATH`` is touched. Its environment keeps kernels
quiet (``JUPYTER_PLATFORM_DIRS``, ``PYDEVD_DISABLE_FILE_VALIDATION``) and hermetic: ``IPYTHONDIR`` and
``TMPDIR`` point into the private directory, so the user's IPython profile cannot change a receipt and a killed
kernel's temporary files go with the directory. Kernels talk over IPC: no ports to pick (none can be taken by
another process meanwhile) and no "running over TCP without encryption" warning.

Each notebook gets a fresh kernel (:meth:`KernelPool.start`), started through jupyter_client's public
``AsyncKernelManager`` and handed to papermill as ``km=`` (:mod:`hermes_nb.nbrun.execute`). Starting it ourselves
is for speed only: the kernel boots while the runner imports papermill and parameterises the notebook, instead of
after (docs/performance.md, P4). nbclient leaves running the client of a kernel it was handed, so the pool's
managers make clients it can stop (:meth:`KernelPool.stop`). :meth:`KernelPool.cancel` (Ctrl-C, SIGTERM) kills
every kernel at once, and refuses the ones asked for after it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

__all__ = ["KERNEL_ARGV", "KERNEL_NAME", "QUIET_ENV", "KernelPool"]

KERNEL_NAME = "hermes-nb-python"
QUIET_ENV = {"JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
#: run by each kernel as it starts (IPython's ``exec_lines``), while the runner still imports papermill: the
#: notebooks' first cells then find pydantic, the runtime config and httpx loaded (P4); it leaves no name behind
WARM = "import hermes_nb.core.resolve as _r, hermes_nb.wire.client as _c; del _r, _c"
#: the kernel's command; no history database (the kernels of a run would share one)
KERNEL_ARGV = ("-m", "ipykernel_launcher", "-f", "{connection_file}", "--HistoryManager.enabled=False",
               f"--IPKernelApp.exec_lines={json.dumps([WARM])}")


class KernelPool:
    """The private kernelspec and the kernels started from it; ``close()`` kills what is left, removes the dir."""

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self.dir = Path(tempfile.mkdtemp(prefix="hermes-nb-"))  # short: the kernels' socket paths are under it
        spec_dir = self.dir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        (self.dir / "tmp").mkdir()
        spec = {"argv": [self.python, *KERNEL_ARGV],
                "display_name": "Python 3 (hermes-nb)", "language": "python",
                "env": {**QUIET_ENV, "IPYTHONDIR": str(self.dir / "ipython"), "TMPDIR": str(self.dir / "tmp")}}
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        self.specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
        self.cancelled = threading.Event()
        self._kernels: list[AsyncKernelManager] = []
        self._clients: list[AsyncKernelClient] = []
        self._ahead: dict[str, AsyncKernelManager] = {}
        self._lock = threading.Lock()
        pool = self

        class Client(AsyncKernelClient):
            def start_channels(self, *args: Any, **kw: Any) -> None:
                with pool._lock:
                    pool._clients.append(self)
                super().start_channels(*args, **kw)

            async def wait_for_ready(self, timeout: float | None = None) -> None:
                """The protocol's handshake (``kernel_info`` answered on shell, IOPub connected), without the
                0.2 s jupyter_client then spends draining IOPub (nbclient reads IOPub by parent id anyway)."""
                deadline = time.monotonic() + (timeout or 60)
                while time.monotonic() < deadline:
                    self.kernel_info()
                    with contextlib.suppress(Empty):
                        if (await self.get_shell_msg(timeout=1))["msg_type"] == "kernel_info_reply":
                            with contextlib.suppress(Empty):
                                await self.get_iopub_msg(timeout=0.2)
                                return
                    if not await self.is_alive():
                        raise RuntimeError("Kernel died before replying to kernel_info")
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

        self.client_class = Client

    def launch(self, cwds: Sequence[Path]) -> list[AsyncKernelManager]:
        """Start a kernel in each directory now (created if needed); :meth:`start` there then takes it. For speed
        only: the smoke's kernels boot while its caller resolves the config and imports papermill (P4)."""
        launched = []
        for cwd in cwds:
            cwd.mkdir(parents=True, exist_ok=True)
            launched.append(km := self.start(cwd))
            with self._lock:
                self._ahead[str(cwd)] = km
        return launched

    def start(self, cwd: Path | str) -> AsyncKernelManager:
        """A fresh kernel in ``cwd``: the one :meth:`launch` started there, else one started now; refused
        (``KeyboardInterrupt``) once the pool is cancelled."""
        with self._lock:
            ahead = self._ahead.pop(str(cwd), None)
        if ahead is not None:
            return ahead
        if self.cancelled.is_set():
            raise KeyboardInterrupt
        name = str(self.dir / f"k{uuid.uuid4().hex[:8]}")  # absolute: jupyter_client's default is cwd-relative
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self.specs, transport="ipc", ip=name,
                                connection_file=f"{name}.json", client_factory=self.client_class)
        with self._lock:
            self._kernels.append(km)
        run_sync(km.start_kernel)(cwd=str(cwd))
        if self.cancelled.is_set():  # cancelled while it started
            _kill(km)
        return km

    def stop(self, km: AsyncKernelManager) -> None:
        """Stop the channels of its clients, kill the kernel and clean up (connection file, sockets)."""
        with self._lock:
            clients = [c for c in self._clients if c.parent is km]
            self._clients = [c for c in self._clients if c.parent is not km]
        for client in clients:
            client.stop_channels()
        _kill(km)  # at once: shutdown_kernel(now=True) would poll for the exit every 0.1 s
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)

    def cancel(self) -> None:
        """Kill every kernel of this pool now; the notebooks then end as ``interrupted``."""
        self.cancelled.set()
        with self._lock:
            kernels = list(self._kernels)
        for km in kernels:
            _kill(km)

    def describe(self) -> dict[str, Any]:
        return {"name": KERNEL_NAME, "python": self.python, "argv": ["<python>", *KERNEL_ARGV]}

    def close(self) -> None:
        """Stop the kernels launched that nobody took, kill any other left, remove the private directory."""
        with self._lock:
            unclaimed, self._ahead = list(self._ahead.values()), {}
        for km in unclaimed:
            self.stop(km)
        self.cancel()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> KernelPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill(km: AsyncKernelManager) -> None:
    """SIGKILL the kernel's process and reap it (``Popen`` only: safe from any thread)."""
    process = getattr(km.provisioner, "process", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
