"""Execute one notebook through papermill on a fresh kernel and decide its verdict from our own record.

Papermill's own record is not trusted for the verdict: after an execution
timeout it marks every cell completed (``exception: null``), and
``sys.exit(0)`` in a cell looks like a failure. :func:`decide_verdict`
decides from *our* record — the exception the execution raised (if any) and
the summary the notebook's verdict cell displayed
(:data:`hermes_nb.receipts.verdict.VERDICT_MIME`). A notebook that never reached its
verdict cell has failed.

Papermill is used as papermill: ``papermill.execute_notebook(template, None, ...)``
parameterises and executes the notebook and writes nothing (``output_path=None``),
so nothing unredacted touches the disk; the caller redacts and scans the executed
notebook before anything is written (:mod:`hermes_nb.receipts`). A notebook that
stops mid-way still yields what it had: papermill hands our ``on_notebook_start``
hook (an nbclient hook it passes through to its engine) the notebook it executes,
and that object is the one papermill fills cell by cell — and, after a cell error,
marks with its error cells — so after a timeout or a dead kernel (where papermill
returns nothing) the receipt still shows every output up to the failure.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_event_loop

from hermes_nb.core.io import iso_now
from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool
from hermes_nb.receipts.verdict import find_verdict

__all__ = ["NotebookRun", "decide_verdict", "execute_notebook", "notebook_schema_ready"]

_schema_lock = threading.Lock()


def notebook_schema_ready() -> None:
    """nbformat compiles its notebook schema into a validator on first use (~0.1 s of CPU) and caches it; the
    notebooks' threads, reading their templates at the same moment, would each compile it: compile it once."""
    import nbformat  # with papermill (below): the kernels are started first

    with _schema_lock:
        nbformat.validate(nbformat.v4.new_notebook())


@dataclass
class NotebookRun:
    name: str
    template: Path
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
    #: the receipt notebook: its path, or the URL it was published at (shared storage)
    receipt_path: Path | str | None = None
    #: (ReceiptFiles, metadata.receipt) once the receipt is written
    written: Any = None
    #: a cell error's cell index and exception name (``cell_error`` only)
    cell: int | None = None
    ename: str | None = None


def decide_verdict(status: str, summary: Mapping[str, Any] | None, error: str | None = None) -> tuple[str, str]:
    """Our verdict from our own record: the execution status and the verdict cell's summary."""
    if status in ("timeout", "dead_kernel", "kernel_error", "runner_error", "interrupted"):
        return "failed", f"{status.replace('_', ' ')}: {error}" if error else status.replace("_", " ")
    if summary is None:
        return "failed", "no verdict recorded (the notebook stopped before its verdict cell)"
    verdict = str(summary.get("verdict"))
    reason = str(summary.get("reason") or verdict)
    if verdict not in ("passed", "failed", "blocked"):
        return "failed", f"unknown verdict {verdict!r}"
    if verdict == "passed" and status != "completed":
        return "failed", f"the verdict cell passed but the notebook ended with {status}: {error}"
    return verdict, reason


def close_thread_loop() -> None:
    """Close the event loop jupyter_core's ``run_sync`` made for this worker thread (papermill, nbclient and
    the kernel's stop ran on it): left open, its selector and self-pipe outlive the thread, three descriptors
    per notebook. Not in the main thread, whose loop belongs to whoever runs us."""
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


def execute_notebook(run: NotebookRun, pool: KernelPool, *, timeout_s: float, cwd: Path,
                     on_start: Callable[[], None] | None = None) -> NotebookRun:
    """Run one notebook on a fresh kernel in ``cwd``; record status, the executed notebook and our verdict.
    ``on_start``: called once its kernel is ready and its first cell is about to run."""
    run.started_at = iso_now()
    t0 = time.perf_counter()
    executing: list[Any] = []  # the notebook papermill executes, as it fills it (on_notebook_start)

    def started(notebook: Any) -> None:
        executing.append(notebook)
        if on_start is not None:
            on_start()

    try:
        error = _execute(run, pool, timeout_s=timeout_s, cwd=cwd, started=started)
    finally:
        close_thread_loop()
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


def _execute(run: NotebookRun, pool: KernelPool, *, timeout_s: float, cwd: Path,
             started: Callable[[Any], None]) -> str | None:
    """papermill as papermill, on a kernel of the pool: sets ``run.status`` and returns the error, if any."""
    error: str | None = None
    km = None
    try:
        km = pool.start(cwd)  # first: it boots while this thread imports papermill and parameterises
        import papermill as pm  # here, not at the top: the kernels are started by then (docs/performance.md, P4)
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
        from papermill.exceptions import PapermillExecutionError

        notebook_schema_ready()
        try:
            pm.execute_notebook(
                str(run.template), None, parameters=run.parameters, kernel_name=KERNEL_NAME, km=km,
                language="python", progress_bar=False, log_output=False, execution_timeout=timeout_s,
                start_timeout=60, on_notebook_start=started,
            )
            run.status = "completed"
        except PapermillExecutionError as exc:
            run.status, error = "cell_error", f"{exc.ename}: {exc.evalue}"
            run.cell, run.ename = exc.cell_index, exc.ename
        except CellTimeoutError:
            run.status, error = "timeout", f"a cell ran longer than the execution timeout ({timeout_s:g} s)"
        except DeadKernelError as exc:
            run.status, error = "dead_kernel", str(exc).splitlines()[0] if str(exc) else "kernel died"
    except KeyboardInterrupt:
        run.status, error = "interrupted", "stopped before its kernel started"
    except (RuntimeError, TimeoutError, OSError) as exc:
        run.status, error = "kernel_error", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 — worker-thread edge: every notebook must end with a verdict
        run.status, error = "runner_error", f"{type(exc).__name__}: {exc}"
    finally:
        if km is not None:
            pool.stop(km)
    return error
