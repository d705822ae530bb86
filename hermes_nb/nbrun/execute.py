"""Execute one notebook through papermill on a fresh kernel and decide its verdict from our own record.

Papermill's own record is not trusted for the verdict: after an execution
timeout it marks every cell completed (``exception: null``), and
``sys.exit(0)`` in a cell looks like a failure. :func:`decide_verdict`
decides from *our* record — the exception the execution raised (if any) and
the summary the notebook's verdict cell displayed
(:data:`hermes_nb.receipts.verdict.VERDICT_MIME`). A notebook that never reached its
verdict cell has failed.

Papermill writes the executed notebook through an in-memory I/O handler
(``hermes-nb-mem://``, :mod:`hermes_nb.nbrun.papermill_plugins`), so nothing unredacted touches the disk; the caller
redacts and scans it before anything is written (:mod:`hermes_nb.receipts`).
It writes it once, at the end (or before raising a cell error), not after
every cell: each save serialises and schema-validates the whole notebook
(~7 ms, 20+ times per notebook, under the GIL the three runner threads
share). After a timeout or a dead kernel papermill writes nothing; our engine
(:class:`~hermes_nb.nbrun.papermill_plugins.KeepingEngine`, papermill's nbclient engine) keeps the notebook it
executes reachable from the thread, so the receipt still shows every output
up to the failure. Both are registered through papermill's documented entry
points (``papermill.io``, ``papermill.engine`` in ``pyproject.toml``).
"""

from __future__ import annotations

import secrets as _secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.clock import iso_now
from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool
from hermes_nb.nbrun.papermill_plugins import ENGINE_NAME, EXECUTING, MEM_SCHEME, MemoryHandler
from hermes_nb.receipts.verdict import find_verdict

__all__ = ["NotebookRun", "decide_verdict", "execute_notebook"]


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
    receipt_path: Path | None = None
    #: (ReceiptFiles, metadata.receipt) once the receipt is written
    written: Any = None
    #: how its kernel started: "fork-server" (forked from :mod:`hermes_nb.nbrun.zygote`) or "process"
    kernel_launch: str = ""
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


def execute_notebook(run: NotebookRun, pool: KernelPool, *, timeout_s: float, cwd: Path) -> NotebookRun:
    """Run one notebook on a fresh kernel; record status, the executed notebook and our verdict."""
    import nbformat

    run.started_at = iso_now()
    t0 = time.perf_counter()
    mem_path = f"{MEM_SCHEME}{run.name}-{_secrets.token_hex(4)}.ipynb"
    error: str | None = None
    km: Any = None
    EXECUTING.nb = None
    try:
        # start the kernel first: it boots while this thread imports papermill and parameterises
        from jupyter_core.utils import run_sync

        if pool.zygote is not None:  # forked kernels wait for the zygote's imports: do the runner's own meanwhile
            import papermill  # noqa: F401

        km = pool.manager_class()(kernel_name=KERNEL_NAME)
        if pool.cancelled.is_set():
            raise KeyboardInterrupt
        run_sync(km.start_kernel)(cwd=str(cwd))
        run.kernel_launch = "fork-server" if getattr(km.provisioner, "forked", False) else "process"
        pool.track(km)
        import papermill as pm
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
        from papermill.exceptions import PapermillExecutionError

        try:
            pm.execute_notebook(
                str(run.template), mem_path, parameters=run.parameters, kernel_name=KERNEL_NAME, km=km,
                engine_name=ENGINE_NAME, language="python", progress_bar=False, log_output=False,
                execution_timeout=timeout_s, start_timeout=60, request_save_on_cell_execute=False,
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
        text = MemoryHandler.pop(mem_path)
        if km is not None and km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    if pool.cancelled.is_set() and run.status not in ("completed", "interrupted"):
        run.status, error = "interrupted", f"stopped while running (then: {error})"
    # written by papermill (completed, cell error), else the notebook as far as it got (timeout, dead kernel)
    run.nb = nbformat.reads(text, as_version=4) if text else getattr(EXECUTING, "nb", None)
    EXECUTING.nb = None
    run.summary = find_verdict(run.nb) if run.nb is not None else None
    run.verdict, run.reason = decide_verdict(run.status, run.summary, error)
    run.errors = list((run.summary or {}).get("errors") or [])
    if error and error not in run.errors:
        run.errors.append(error)
    run.finished_at = iso_now()
    run.duration_s = time.perf_counter() - t0
    return run
