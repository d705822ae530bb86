"""Execute the notebooks headlessly through papermill and keep them as receipts.

The three notebooks run **concurrently**, each in its own thread with its own
fresh kernel (:class:`~hermes_nb.kernels.KernelPool`); nothing is shared
between receipts and the process never ``chdir``s (absolute paths only; the
kernel's working directory is a private temp dir).

Papermill's own record is not trusted for the verdict: after an execution
timeout it marks every cell completed, and ``sys.exit(0)`` in a cell looks
like a failure. :func:`decide_verdict` decides from *our* record — the
exception the execution raised (if any) and the summary the notebook's
verdict cell displayed (:data:`hermes_nb.nbkit.VERDICT_MIME`). A notebook
that never reached its verdict cell has failed.

Papermill writes the executed notebook through an in-memory I/O handler
(``hermes-nb-mem://``), so nothing unredacted touches the disk; the receipt
is redacted and scanned before :func:`hermes_nb.receipts.write_receipt`
writes it.
"""

from __future__ import annotations

import importlib.metadata
import secrets as _secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .errors import SecretLeak, UsageError
from .kernels import KERNEL_NAME, KernelPool
from .nbkit import find_verdict, sha256_bytes, sha256_file
from .receipts import HtmlRenderer, append_index, canonical_json, index_entry, write_receipt
from .redact import Redactor

__all__ = [
    "NOTEBOOKS",
    "TARGET_KINDS",
    "REPO_ROOT",
    "notebooks_dir",
    "SmokeTarget",
    "NotebookRun",
    "SmokeResult",
    "decide_verdict",
    "overall_verdict",
    "new_run_id",
    "execute_notebook",
    "run_smoke",
    "run_notebooks",
]

NOTEBOOKS = ("wire_format_spike", "adapter_check", "e2e_smoke")
TARGET_KINDS = ("emulator", "rig", "live")
REPO_ROOT = Path(__file__).resolve().parent.parent
MEM_SCHEME = "hermes-nb-mem://"


def notebooks_dir() -> Path:
    return REPO_ROOT / "notebooks"


@dataclass
class SmokeTarget:
    """Where the notebooks point: ``endpoint`` None = each notebook starts its own emulator."""

    kind: str = "emulator"
    endpoint: str | None = None
    model: str | None = None
    hermes_version: str | None = None
    secrets: list[str] = field(default_factory=list)


@dataclass
class NotebookRun:
    name: str
    template: Path
    parameters: dict[str, Any]
    status: str = "pending"  # completed | cell_error | timeout | dead_kernel | kernel_error | runner_error
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


@dataclass
class SmokeResult:
    verdict: str
    run_id: str
    out_dir: Path
    runs: list[NotebookRun]
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "run_id": self.run_id,
            "out_dir": str(self.out_dir),
            "duration_s": round(self.duration_s, 3),
            "receipts": [
                {"notebook": r.name, "path": str(r.receipt_path) if r.receipt_path else None,
                 "verdict": r.verdict, "status": r.status, "reason": r.reason,
                 "duration_s": round(r.duration_s, 3)}
                for r in self.runs
            ],
        }


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(now: datetime | None = None) -> str:
    ts = now or _now()
    return ts.strftime("%Y%m%dT%H%M%SZ") + "-" + _secrets.token_hex(3)


def decide_verdict(status: str, summary: Mapping[str, Any] | None, error: str | None = None) -> tuple[str, str]:
    """Our verdict from our own record: the execution status and the verdict cell's summary."""
    if status in ("timeout", "dead_kernel", "kernel_error", "runner_error"):
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


def overall_verdict(verdicts: Sequence[str]) -> str:
    """failed wins over blocked wins over passed."""
    if any(v == "failed" for v in verdicts):
        return "failed"
    if any(v == "blocked" for v in verdicts):
        return "blocked"
    return "passed"


# --------------------------------------------------------------------------- papermill in memory

class _MemoryHandler:
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


_REGISTER_LOCK = threading.Lock()


def _papermill() -> Any:
    import papermill
    from papermill.iorw import papermill_io

    with _REGISTER_LOCK:
        if not any(scheme == MEM_SCHEME for scheme, _ in papermill_io._handlers):
            papermill_io.register(MEM_SCHEME, _MemoryHandler)
    return papermill


def execute_notebook(run: NotebookRun, pool: KernelPool, *, timeout_s: float, cwd: Path) -> NotebookRun:
    """Run one notebook on a fresh kernel; record status, the executed notebook and our verdict."""
    import nbformat

    started = _now()
    run.started_at = _iso(started)
    t0 = time.perf_counter()
    mem_path = f"{MEM_SCHEME}{run.name}-{_secrets.token_hex(4)}.ipynb"
    error: str | None = None
    km: Any = None
    try:
        # start the kernel first: it boots while this thread imports papermill and parameterises
        from jupyter_core.utils import run_sync

        km = pool.manager_class()(kernel_name=KERNEL_NAME)
        run_sync(km.start_kernel)(cwd=str(cwd))
        pm = _papermill()
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
        from papermill.exceptions import PapermillExecutionError

        try:
            pm.execute_notebook(
                str(run.template), mem_path, parameters=run.parameters, kernel_name=KERNEL_NAME, km=km,
                language="python", progress_bar=False, log_output=False, execution_timeout=timeout_s,
                start_timeout=60, request_save_on_cell_execute=True,
            )
            run.status = "completed"
        except PapermillExecutionError as exc:
            run.status, error = "cell_error", f"{exc.ename}: {exc.evalue}"
        except CellTimeoutError:
            run.status, error = "timeout", f"a cell ran longer than the execution timeout ({timeout_s:g} s)"
        except DeadKernelError as exc:
            run.status, error = "dead_kernel", str(exc).splitlines()[0] if str(exc) else "kernel died"
    except (RuntimeError, TimeoutError, OSError) as exc:
        run.status, error = "kernel_error", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 — worker-thread edge: every notebook must end with a verdict
        run.status, error = "runner_error", f"{type(exc).__name__}: {exc}"
    finally:
        text = _MemoryHandler.pop(mem_path)
        if km is not None and km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    run.nb = nbformat.reads(text, as_version=4) if text else None
    run.summary = find_verdict(run.nb) if run.nb is not None else None
    run.verdict, run.reason = decide_verdict(run.status, run.summary, error)
    run.errors = list((run.summary or {}).get("errors") or [])
    if error and error not in run.errors:
        run.errors.append(error)
    run.finished_at = _iso(_now())
    run.duration_s = time.perf_counter() - t0
    return run


# --------------------------------------------------------------------------- receipts

def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.name


def receipt_metadata(run: NotebookRun, *, run_id: str, target: SmokeTarget, pool: KernelPool,
                     timeout_s: float, redactor: Redactor) -> dict[str, Any]:
    summary = run.summary or {}
    lock = REPO_ROOT / "requirements.lock"
    papermill_meta = (run.nb.metadata.get("papermill", {}) if run.nb is not None else {})
    params = redactor.data(run.parameters)
    return {
        "schema": "hermes-nb.receipt.v1",
        "notebook": run.name,
        "run_id": run_id,
        "verdict": run.verdict,
        "status": run.status,
        "reason": run.reason,
        "errors": run.errors,
        "target_kind": target.kind,
        "endpoint": summary.get("endpoint") or target.endpoint,
        "model": summary.get("model") or run.parameters.get("model"),
        "hermes_nb_version": __version__,
        "python": {"version": sys.version.split()[0], "implementation": sys.implementation.name},
        "kernel": {**pool.describe(), "language_version":
                   (run.nb.metadata.get("language_info", {}).get("version") if run.nb is not None else None)},
        "papermill_version": _version("papermill"),
        "nbclient_version": _version("nbclient"),
        "hermes_agent_version": summary.get("hermes_version") or target.hermes_version,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "duration_s": round(run.duration_s, 3),
        "execution_timeout_s": timeout_s,
        "template": {"path": _rel(run.template), "sha256": sha256_file(run.template)},
        "parameters": params,
        "parameters_sha256": sha256_bytes(canonical_json(params).encode()),
        "lock": {"path": lock.name, "sha256": sha256_file(lock) if lock.is_file() else None},
        "artifacts": dict(summary.get("artifacts") or {}),
        "papermill_exception_recorded": papermill_meta.get("exception"),
        "summary": {k: v for k, v in summary.items() if k not in ("run_dir",)},
    }


def _artifact_sources(run: NotebookRun) -> dict[str, Path]:
    """The run artifacts to copy into the receipt; each must still match the digest the kernel recorded."""
    summary = run.summary or {}
    run_dir = summary.get("run_dir")
    sources: dict[str, Path] = {}
    for name, digest in (summary.get("artifacts") or {}).items() if run_dir else ():
        path = Path(run_dir) / name
        if not path.is_file() or sha256_file(path) != digest:
            run.verdict, run.reason = "failed", f"artifact {name} changed or vanished after the run"
            run.errors.append(run.reason)
            continue
        sources[name] = path
    return sources


def run_smoke(target: SmokeTarget, *, out_dir: Path, only: Sequence[str] | None = None,
              timeout_s: float = 120.0, html: bool = True, templates: Path | None = None,
              progress: Callable[[str], None] | None = None, run_id: str | None = None) -> SmokeResult:
    """Execute the notebooks concurrently and write one receipt each, plus the index."""
    names = list(dict.fromkeys(only)) if only else list(NOTEBOOKS)  # a repeated --only runs once
    template_dir = templates or notebooks_dir()
    for name in names:
        if not (template_dir / f"{name}.ipynb").is_file():
            raise UsageError(f"no notebook {name!r} in {template_dir}")
    if timeout_s <= 0:
        raise UsageError(f"--timeout must be > 0, got {timeout_s:g}")
    say_lock = threading.Lock()

    def say(msg: str) -> None:  # one whole line at a time from the worker threads
        if progress is not None:
            with say_lock:
                progress(msg)

    t0 = time.perf_counter()
    run_id = run_id or new_run_id()
    out_dir = Path(out_dir).resolve()
    receipt_dir = out_dir / _now().strftime("%Y-%m-%d") / run_id
    redactor = Redactor(target.secrets)
    renderer = HtmlRenderer() if html else None
    work = Path(tempfile.mkdtemp(prefix="hermes-nb-smoke-"))
    runs: list[NotebookRun] = []
    try:
        for name in names:
            params: dict[str, Any] = {"endpoint": target.endpoint}
            if target.model:
                params["model"] = target.model
            if name == "e2e_smoke":
                (work / "e2e-root").mkdir()
                params["root"] = str(work / "e2e-root")
            runs.append(NotebookRun(name=name, template=(template_dir / f"{name}.ipynb").resolve(), parameters=params))
        with KernelPool() as pool:
            def job(run: NotebookRun) -> NotebookRun:
                cwd = work / run.name
                cwd.mkdir(parents=True, exist_ok=True)
                say(f"{run.name}: running")
                execute_notebook(run, pool, timeout_s=timeout_s, cwd=cwd)
                artifacts = _artifact_sources(run)
                meta = receipt_metadata(run, run_id=run_id, target=target, pool=pool, timeout_s=timeout_s,
                                        redactor=redactor)
                nb = run.nb if run.nb is not None else _empty_notebook(run.template)
                if "papermill" in nb.metadata:
                    nb.metadata["papermill"]["exception"] = run.verdict != "passed"
                try:
                    files = write_receipt(nb, receipt_dir, run.name, meta, redactor=redactor, renderer=renderer,
                                          artifacts=artifacts)
                except SecretLeak as exc:
                    run.verdict, run.reason = "failed", str(exc)
                    run.errors.append(str(exc))
                    say(f"{run.name}: failed: {exc}")
                    return run
                run.receipt_path = files.notebook
                run.written = (files, meta)
                say(f"{run.name}: {run.verdict} ({run.reason}) in {run.duration_s:.2f} s")
                return run

            with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="hermes-nb-smoke") as ex:
                runs = list(ex.map(job, runs))
        entries = [index_entry(out_dir, *r.written) for r in runs if r.written is not None]
        append_index(out_dir, entries, redactor=redactor)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in runs:
        r.nb = r.written = None  # the receipts on disk are the record; drop the in-memory copies
    verdict = overall_verdict([r.verdict for r in runs])
    return SmokeResult(verdict, run_id, out_dir, runs, time.perf_counter() - t0)


def _empty_notebook(template: Path) -> Any:
    import nbformat

    return nbformat.read(str(template), as_version=4)


#: the name the team brief uses for the runner
run_notebooks = run_smoke
