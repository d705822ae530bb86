"""One notebook through papermill on a fresh kernel, its verdict from our own record (papermill marks every cell
completed after a timeout). The kernelspec lives in a private directory with ``IPYTHONDIR`` and ``TMPDIR``: no user
profile in a receipt, a killed kernel's files go with it. Kernels talk over IPC; we start them (``km=``) for speed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_event_loop, run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from hermes_nb.core.io import iso_now
from hermes_nb.receipts.verdict import find_verdict

KERNEL_NAME = "hermes-nb-python"
QUIET_ENV = {"JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
#: run by each kernel as it starts, while the runner imports papermill: the first cells find these loaded (P4)
WARM = "import hermes_nb.core.resolve as _r, hermes_nb.wire.client as _c; del _r, _c"
#: no history database (the kernels of a run would share one)
KERNEL_ARGV = ("-m", "ipykernel_launcher", "-f", "{connection_file}", "--HistoryManager.enabled=False",
               f"--IPKernelApp.exec_lines={json.dumps([WARM])}")


class _Client(AsyncKernelClient):
    """Recorded on its kernel's manager, so :meth:`KernelPool.stop` stops it (nbclient leaves it open)."""

    def start_channels(self, *args: Any, **kw: Any) -> None:
        vars(self.parent).setdefault("hermes_nb_clients", []).append(self)
        super().start_channels(*args, **kw)

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """The handshake without the 0.2 s jupyter_client then spends draining IOPub (P4)."""
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


class KernelPool:
    """The private kernelspec and the kernels started from it; ``close()`` kills what is left, removes the dir."""

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self.dir = Path(tempfile.mkdtemp(prefix="hermes-nb-"))  # short: the kernels' socket paths are under it
        spec_dir = self.dir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        (self.dir / "tmp").mkdir()
        env = {**QUIET_ENV, "IPYTHONDIR": str(self.dir / "ipython"), "TMPDIR": str(self.dir / "tmp")}
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [self.python, *KERNEL_ARGV], "display_name": "Python 3 (hermes-nb)", "language": "python",
            "env": env}, indent=1), encoding="utf-8")
        self.specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
        self.cancelled = threading.Event()
        self._kernels: list[AsyncKernelManager] = []
        self._ahead: dict[str, AsyncKernelManager] = {}
        self._lock = threading.Lock()

    def launch(self, cwds: Sequence[Path]) -> None:
        """Start a kernel in each directory now; :meth:`start` there takes it."""
        for cwd in cwds:
            cwd.mkdir(parents=True, exist_ok=True)
            km = self.start(cwd)
            with self._lock:
                self._ahead[str(cwd)] = km

    def start(self, cwd: Path | str) -> AsyncKernelManager:
        """The kernel :meth:`launch` started in ``cwd``, else a fresh one; refused once the pool is cancelled."""
        with self._lock:
            ahead = self._ahead.pop(str(cwd), None)
        if ahead is not None:
            return ahead
        if self.cancelled.is_set():
            raise KeyboardInterrupt
        name = str(self.dir / f"k{uuid.uuid4().hex[:8]}")  # absolute: jupyter_client's default is cwd-relative
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self.specs, transport="ipc", ip=name,
                                connection_file=f"{name}.json", client_factory=_Client)
        with self._lock:
            self._kernels.append(km)
        run_sync(km.start_kernel)(cwd=str(cwd))
        if self.cancelled.is_set():  # cancelled while it started
            _kill(km)
        return km

    def stop(self, km: AsyncKernelManager) -> None:
        for client in vars(km).pop("hermes_nb_clients", []):
            client.stop_channels()
        _kill(km)  # at once: shutdown_kernel(now=True) would poll for the exit every 0.1 s
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)

    def cancel(self) -> None:
        """Kill every kernel now (Ctrl-C, SIGTERM); the notebooks then end ``interrupted``."""
        self.cancelled.set()
        with self._lock:
            kernels = list(self._kernels)
        for km in kernels:
            _kill(km)

    def close(self) -> None:
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


def quiet_notebook_loggers() -> None:
    """papermill/nbclient log what our progress lines say once."""
    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _kill(km: AsyncKernelManager) -> None:
    """SIGKILL the kernel's process and reap it (``Popen`` only: safe from any thread)."""
    process = getattr(km.provisioner, "process", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


@dataclass
class NotebookRun:
    name: str
    #: the notebook's path, or the notebook itself (built in memory: the refresh)
    template: Any
    parameters: dict[str, Any]
    #: completed | cell_error | timeout | dead_kernel | kernel_error | runner_error | interrupted
    status: str = "pending"
    verdict: str = "failed"
    reason: str = ""
    errors: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    nb: Any = None
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    #: the receipt notebook: its path, or its URL (shared storage)
    receipt_path: Path | str | None = None
    #: (ReceiptFiles, metadata.receipt) once the receipt is written
    written: Any = None
    cell: int | None = None
    ename: str | None = None


def decide_verdict(status: str, summary: Mapping[str, Any] | None, error: str | None = None) -> tuple[str, str]:
    """Our verdict from our own record: the execution status and the verdict cell's summary."""
    if status in ("timeout", "dead_kernel", "kernel_error", "runner_error", "interrupted"):
        return "failed", f"{status.replace('_', ' ')}: {error}" if error else status.replace("_", " ")
    if summary is None:
        return "failed", "no verdict recorded (the notebook stopped before its verdict cell)"
    verdict = str(summary.get("verdict"))
    if verdict not in ("passed", "failed", "blocked"):
        return "failed", f"unknown verdict {verdict!r}"
    if verdict == "passed" and status != "completed":
        return "failed", f"the verdict cell passed but the notebook ended with {status}: {error}"
    return verdict, str(summary.get("reason") or verdict)


def execute_notebook(run: NotebookRun, pool: KernelPool, *, timeout_s: float, cwd: Path) -> NotebookRun:
    """Run one notebook on a fresh kernel in ``cwd``; record status, the executed notebook and our verdict.
    Papermill writes nothing (the caller redacts first); the notebook ``on_notebook_start`` gets is filled cell by
    cell, so after a timeout or a dead kernel the receipt still shows every output up to the failure."""
    run.started_at = iso_now()
    t0 = time.perf_counter()
    executing: list[Any] = []
    error: str | None = None
    km = None
    try:
        km = pool.start(cwd)  # first: it boots while this thread imports papermill and parameterises
        import papermill  # after the kernel starts: it boots while this imports (P4)

        papermill.execute_notebook(
            run.template, None, parameters=run.parameters, kernel_name=KERNEL_NAME, km=km, language="python",
            progress_bar=False, log_output=False, execution_timeout=timeout_s, start_timeout=60,
            on_notebook_start=lambda notebook: executing.append(notebook))
        run.status = "completed"
    except KeyboardInterrupt:
        run.status, error = "interrupted", "stopped before its kernel started"
    except Exception as exc:  # noqa: BLE001 — worker-thread edge: every notebook must end with a verdict
        run.status, error = _failure(exc, timeout_s)
        run.cell, run.ename = getattr(exc, "cell_index", None), getattr(exc, "ename", None)
    finally:
        if km is not None:
            pool.stop(km)
        _close_thread_loop()
    if pool.cancelled.is_set() and run.status not in ("completed", "interrupted"):
        run.status, error = "interrupted", f"stopped while running (then: {error})"
    run.nb = executing[0] if executing else None
    run.summary = find_verdict(run.nb) if run.nb is not None else None
    run.verdict, run.reason = decide_verdict(run.status, run.summary, error)
    run.errors = list((run.summary or {}).get("errors") or [])
    if error and error not in run.errors:
        run.errors.append(error)
    run.finished_at = iso_now()
    run.duration_s = time.perf_counter() - t0
    return run


def _failure(exc: Exception, timeout_s: float) -> tuple[str, str]:
    if hasattr(exc, "ename") and hasattr(exc, "evalue"):  # papermill's PapermillExecutionError: a cell raised
        return "cell_error", f"{exc.ename}: {exc.evalue}"
    if isinstance(exc, CellTimeoutError):
        return "timeout", f"a cell ran longer than the execution timeout ({timeout_s:g} s)"
    if isinstance(exc, DeadKernelError):
        return "dead_kernel", str(exc).splitlines()[0] if str(exc) else "kernel died"
    if isinstance(exc, (RuntimeError, TimeoutError, OSError)):
        return "kernel_error", f"{type(exc).__name__}: {exc}"
    return "runner_error", f"{type(exc).__name__}: {exc}"


def _close_thread_loop() -> None:
    """Close the event loop ``run_sync`` made for this worker thread (left open, its selector outlives the thread)."""
    if threading.current_thread() is threading.main_thread():
        return
    loop = ensure_event_loop()
    if loop.is_running():
        return
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
