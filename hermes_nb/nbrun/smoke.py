"""The notebooks run concurrently, each on a fresh kernel, against one target, kept as receipts with an index. A
signal while they run kills the kernels: the running ones are recorded ``cancelled``, the finished receipts kept.
One notebook's verdict comes from our own record (papermill marks every cell completed after a timeout). The
kernelspec lives in a private directory with ``IPYTHONDIR`` and ``TMPDIR``: no user profile in a receipt, a killed
kernel's files go with it. Kernels talk over IPC (loopback TCP under a TMPDIR too deep for a socket's path); we
start them (``km=``) for speed."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_event_loop, run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from hermes_nb import __version__
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ArtifactError, HermesError, SecretLeak, UsageError
from hermes_nb.core.facts import E2E_SMOKE, NOTEBOOKS, data_dir, notebooks_dir, plain_http_warning, worst_verdict
from hermes_nb.core.io import iso_now, json_digest, new_run_id, prove_dir, sha256_file
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.signals import SIGNAL_NAMES, Cancelled, SignalGuard
from hermes_nb.receipts.index import append_index, index_entry, write_index_html
from hermes_nb.receipts.verdict import find_verdict, operator_action, proxy_state
from hermes_nb.receipts.write import RECEIPT_SCHEMA, write_receipt
from hermes_nb.target import Target
from hermes_nb.views.htmlkit import box, kv_html, seconds, table_html

KERNEL_NAME = "hermes-nb-python"
#: the longest kernel name under which every IPC socket path (``<name>-<port>``) fits in a sockaddr_un (107 bytes)
IPC_PATH_MAX = 100
QUIET_ENV = {"JUPYTER_PLATFORM_DIRS": "1"}
#: ipykernel's own launcher (``python -m ipykernel_launcher``) without the debugger: importing debugpy is 0.15-0.25 s
#: of CPU in every kernel's start (P4), a headless run never attaches one, and ipykernel starts without it (it
#: reports ``debugger: false``) when debugpy cannot be imported, which a ``None`` in ``sys.modules`` makes so
LAUNCH = "import runpy, sys; sys.modules['debugpy'] = None; runpy.run_module('ipykernel_launcher', run_name='__main__')"
#: run by each kernel as it starts, while the runner imports papermill: the first cells find these loaded (P4)
WARM = "import hermes_nb.core.resolve as _r, hermes_nb.wire.client as _c; del _r, _c"
#: no history database (the kernels of a run would share one)
KERNEL_ARGV = ("-c", LAUNCH, "-f", "{connection_file}", "--HistoryManager.enabled=False",
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
            "env": env}), encoding="utf-8")
        self.specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
        self.cancelled = threading.Event()
        self._kernels: list[AsyncKernelManager] = []
        self._ahead: dict[str, AsyncKernelManager] = {}
        self._lock = threading.Lock()

    def launch(self, cwds: Sequence[Path]) -> list[AsyncKernelManager]:
        """Start a kernel in each directory now; :meth:`start` there takes it."""
        launched = []
        for cwd in cwds:
            cwd.mkdir(parents=True, exist_ok=True)
            launched.append(km := self.start(cwd))
            with self._lock:
                self._ahead[str(cwd)] = km
        return launched

    def start(self, cwd: Path | str) -> AsyncKernelManager:
        """The kernel :meth:`launch` started in ``cwd``, else a fresh one; refused once the pool is cancelled."""
        with self._lock:
            ahead = self._ahead.pop(str(cwd), None)
        if ahead is not None:
            return ahead
        if self.cancelled.is_set():
            raise KeyboardInterrupt
        name = str(self.dir / f"k{uuid.uuid4().hex[:8]}")  # absolute: jupyter_client's default is cwd-relative
        # a socket's path is at most 107 bytes (``<name>-<port>``): under a deep TMPDIR, loopback TCP instead
        transport, ip = ("ipc", name) if len(os.fsencode(name)) <= IPC_PATH_MAX else ("tcp", "127.0.0.1")
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self.specs, transport=transport, ip=ip,
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


def signal_name(exc: BaseException) -> str:
    return SIGNAL_NAMES.get(getattr(exc, "signum", 2), "SIGINT")


@dataclass
class SmokeResult:
    verdict: str
    run_id: str
    #: the receipts directory, or the storage URL they were published to
    out_dir: Path | str
    runs: list[NotebookRun]
    duration_s: float
    target: Target = field(default_factory=lambda: Target(endpoint="", kind="emulator"))
    #: what the outputs must never contain (the bearer, secret headers, the rig's credentials)
    secrets: list[str] = field(default_factory=list, repr=False)
    #: the signal that stopped the run (``SIGINT``, ``SIGTERM``, ``SIGHUP``), None when it ran to the end
    cancelled_by: str | None = None
    #: outputs not written (the index on a full disk): the smoke fails naming them
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "run_id": self.run_id, "target_kind": self.target.kind,
            "provider": self.target.provider, "endpoint": self.target.endpoint, "target_evidence": self.target.evidence,
            "out_dir": str(self.out_dir), "duration_s": round(self.duration_s, 3), "cancelled_by": self.cancelled_by,
            "receipts": [{"notebook": r.name, "path": str(r.receipt_path) if r.receipt_path else None,
                          "verdict": r.verdict, "status": r.status, "reason": r.reason,
                          "duration_s": round(r.duration_s, 3)} for r in self.runs],
        }

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        runs = ", ".join(f"{r.name} {r.verdict}" for r in self.runs)
        provider = f", provider {self.target.provider}" if self.target.provider else ""
        p.text("SmokeResult(...)" if cycle else Redactor().text(
            f"SmokeResult({self.verdict}, run {self.run_id}, target {self.target.kind} {self.target.endpoint}"
            f"{provider}, {self.duration_s:.3f} s: {runs})"))

    def _repr_html_(self) -> str:
        head = kv_html([("verdict", self.verdict), ("run id", self.run_id), ("target", self.target.kind),
                        ("provider", self.target.provider), ("endpoint", self.target.endpoint),
                        ("duration", seconds(self.duration_s)), ("receipts in", str(self.out_dir))],
                       badges=("verdict",))
        rows = [{"notebook": r.name, "verdict": r.verdict, "reason": r.reason, "duration": seconds(r.duration_s),
                 "receipt": str(r.receipt_path) if r.receipt_path else None} for r in self.runs]
        return box("smoke", self.verdict, head,
                   table_html(rows, ("notebook", "verdict", "reason", "duration", "receipt"), badges=("verdict",)))


def _notebooks(only: Sequence[str] | None, templates: Path | None) -> tuple[list[str], Path]:
    names = list(dict.fromkeys(only)) if only else list(NOTEBOOKS)  # a repeated --only runs once
    template_dir = templates or notebooks_dir()
    for name in names:
        if not (template_dir / f"{name}.ipynb").is_file():
            raise UsageError(f"no notebook {name!r} in {template_dir}")
    return names, template_dir


def launch_kernels(only: Sequence[str] | None = None, templates: Path | None = None) -> KernelPool:
    """One kernel per notebook, started now: they boot while the caller resolves its target (P4)."""
    names, _ = _notebooks(only, templates)
    pool = KernelPool()
    try:
        pool.launch([pool.dir / "work" / name for name in names])
    except BaseException:
        pool.close()
        raise
    return pool


def run_smoke(target: Target, config: HermesProxyRuntimeConfig, *, out_dir: Path,
              only: Sequence[str] | None = None, timeout_s: float = 120.0, html: bool = True,
              templates: Path | None = None, progress: Callable[[str], None] | None = None, run_id: str | None = None,
              secrets: Sequence[str] = (), guard: SignalGuard | None = None,
              parameters: Mapping[str, Mapping[str, Any]] | None = None,
              kernels: KernelPool | None = None) -> SmokeResult:
    """Execute the notebooks concurrently against ``target`` and write one receipt each, plus the index (the bearer
    reaches a kernel in ``HERMES_NB_AUTH_TOKEN`` only). ``secrets``: more values no output may contain; ``guard``:
    armed while the notebooks run; ``parameters``: notebook name → extra parameters; ``kernels``: from
    :func:`launch_kernels` with the same ``only``, taken over."""
    if timeout_s <= 0:
        if kernels is not None:
            kernels.close()
        raise UsageError(f"the cell timeout must be > 0 seconds, got {timeout_s:g}")
    with kernels if kernels is not None else launch_kernels(only, templates) as pool:
        names, template_dir = _notebooks(only, templates)
        secrets, parameters = [*config.secrets(), *secrets], parameters or {}
        say_lock = threading.Lock()

        def say(msg: str) -> None:  # one whole line at a time from the worker threads
            if progress is not None:
                with say_lock:
                    progress(msg)

        t0 = time.perf_counter()
        if target.evidence and target.kind == "emulator" and config.origin("endpoint") != "emulator":
            say(f"target kind: emulator ({target.evidence})")
        started = datetime.now(UTC)
        run_id = run_id or new_run_id(started)
        out_dir = prove_dir(Path(out_dir).resolve(), "receipts directory")
        receipt_dir = out_dir / started.strftime("%Y-%m-%d") / run_id
        redactor = Redactor(secrets)
        work = pool.dir / "work"
        runs: list[NotebookRun] = []
        for name in names:
            params: dict[str, Any] = ({"target": target.to_parameter(), "config": config.to_parameter()}
                                      if name in NOTEBOOKS else {"endpoint": target.endpoint, "model": config.model})
            if name == E2E_SMOKE:
                (work / "e2e-root").mkdir()
                params["root"] = str(work / "e2e-root")
            params.update(parameters.get(name, {}))
            runs.append(NotebookRun(name, (template_dir / f"{name}.ipynb").resolve(), params))
        common: dict[str, Any] = {"run_id": run_id, "target": target, "pool": pool, "timeout_s": timeout_s,
                                  "redactor": redactor, "endpoint_origin": config.origin("endpoint")}
        nbformat.validate(nbformat.v4.new_notebook())  # its schema compiled once (~0.1 s), not by every thread
        stopped = {"by": "SIGINT"}  # the signal's name, set before the kernels are killed (the workers read it)

        def job(run: NotebookRun) -> NotebookRun:
            say(f"{run.name}: running")
            execute_notebook(run, pool, timeout_s=timeout_s, cwd=work / run.name)
            if run.status == "interrupted":  # stopped by a signal while it ran: not a failure of the proxy
                run.verdict, run.reason = "cancelled", f"cancelled by {stopped['by']} while it ran"
            artifacts = artifact_sources(run)
            meta = receipt_metadata(run, **common)
            nb = run.nb if run.nb is not None else nbformat.read(str(run.template), as_version=4)
            if "papermill" in nb.metadata:
                nb.metadata["papermill"]["exception"] = run.verdict != "passed"
            if run.verdict == "blocked":  # expected, with an operator action: no red "Exception" banner
                nb.cells = [c for c in nb.cells if "papermill-error-cell-tag" not in c.metadata.get("tags", [])]
            try:
                files = write_receipt(nb, receipt_dir, run.name, meta, redactor=redactor, page=html,
                                      artifacts=artifacts)
            except (SecretLeak, ArtifactError, OSError) as exc:
                reason = str(exc) if isinstance(exc, HermesError) else f"receipt not written: {exc}"
                run.verdict, run.reason = "failed", reason
                run.errors.append(reason)
                say(f"{run.name}: failed: {reason}")
                return run
            run.receipt_path, run.written = files.notebook, (files, meta)
            say(f"{run.name}: {run.verdict} ({run.reason}) in {run.duration_s:.2f} s")
            return run

        cancelled_by: str | None = None
        with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="hermes-nb-smoke") as ex:
            futures = [ex.submit(job, r) for r in runs]
            try:
                if guard is not None:
                    guard.arm()  # a signal that came while the kernels started cancels here
                environment_digest()  # computed here once, while the notebooks run; every receipt records it
                runs = [f.result() for f in futures]
            except (KeyboardInterrupt, Cancelled) as exc:  # kill the kernels, keep and index the receipts
                cancelled_by = stopped["by"] = signal_name(exc)
                say(f"{cancelled_by}: stopping the kernels; the receipts of the running notebooks say cancelled")
                pool.cancel()
                runs = [f.result() for f in futures]
            finally:
                if guard is not None:
                    guard.armed = False  # from here on a signal waits: the receipts and index get written
        problems: list[str] = []
        try:
            append_index(out_dir, [index_entry(out_dir, *r.written) for r in runs if r.written], redactor=redactor)
            write_index_html(out_dir, redactor=redactor)
        except (ArtifactError, OSError) as exc:  # e.g. the disk filled up: the smoke fails naming the file
            problems.append(str(exc) if isinstance(exc, ArtifactError) else f"receipts index not written: {exc}")
        for r in runs:
            r.nb = r.written = None  # the receipts on disk are the record
        verdict = "cancelled" if cancelled_by else worst_verdict(r.verdict for r in runs)
        return SmokeResult(verdict, run_id, out_dir, runs, time.perf_counter() - t0, target, secrets, cancelled_by,
                           problems)


@functools.cache
def environment_digest() -> dict[str, Any]:
    """How many distributions are installed, and the sha256 of their sorted ``name==version`` list (read from each
    one's metadata headers only: ``Distribution.metadata`` parses the whole long description too, 5x the time)."""
    parser = HeaderParser()
    headers = [parser.parsestr(d.read_text("METADATA") or d.read_text("PKG-INFO") or "")
               for d in importlib.metadata.distributions()]
    pins = sorted({f"{m['Name'].lower()}=={m['Version']}" for m in headers if m["Name"]})
    return {"packages": len(pins), "sha256": json_digest(pins)}


def receipt_metadata(run: NotebookRun, *, run_id: str, target: Target, pool: KernelPool, timeout_s: float,
                     redactor: Redactor, endpoint_origin: str | None = None) -> dict[str, Any]:
    summary = run.summary or {}
    nb_meta = run.nb.metadata if run.nb is not None else {}
    params = redactor.data(run.parameters)
    endpoint = summary.get("endpoint") or target.endpoint
    try:
        template = "hermes_nb/data/" + run.template.resolve().relative_to(data_dir().resolve()).as_posix()
    except ValueError:
        template = run.template.name
    return {
        "schema": RECEIPT_SCHEMA, "notebook": run.name, "run_id": run_id, "verdict": run.verdict,
        "status": run.status, "reason": run.reason, "errors": run.errors,
        # a blocked notebook is an expected outcome with an action: said once, up front (index.html, CI)
        "operator_action": operator_action(summary, run.reason, run.errors) if run.verdict == "blocked" else None,
        "target_kind": target.kind, "proxy_state": proxy_state(summary), "target_evidence": target.evidence,
        "endpoint": endpoint, "endpoint_origin": endpoint_origin,
        "target_warnings": [w for w in [plain_http_warning(endpoint)] if w],
        "model": summary.get("model") or (run.parameters.get("config") or {}).get("model"),
        "hermes_nb_version": __version__,
        "python": {"version": sys.version.split()[0], "implementation": sys.implementation.name},
        "kernel": {"name": KERNEL_NAME, "python": pool.python, "argv": ["<python>", *KERNEL_ARGV],
                   "language_version": nb_meta.get("language_info", {}).get("version")},
        "papermill_version": importlib.metadata.version("papermill"),
        "nbclient_version": importlib.metadata.version("nbclient"),
        # the release under test: the target's (the rig, --hermes-bin), never a local install's
        "hermes_agent_version": target.release, "hermes_agent_version_source": target.release_source,
        "provider": target.provider or summary.get("provider"),
        "started_at": run.started_at, "finished_at": run.finished_at, "duration_s": round(run.duration_s, 3),
        "execution_timeout_s": timeout_s,
        "template": {"path": template, "sha256": sha256_file(run.template)},
        "parameters": params, "parameters_sha256": json_digest(params),
        "environment": environment_digest(),
        "artifacts": dict(summary.get("artifacts") or {}),
        "papermill_exception_recorded": nb_meta.get("papermill", {}).get("exception"),
        "summary": {k: v for k, v in summary.items() if k != "run_dir"},
    }


def artifact_sources(run: NotebookRun) -> dict[str, Path]:
    """The run artifacts to copy into the receipt; each must still match the digest the kernel recorded."""
    summary = run.summary or {}
    sources: dict[str, Path] = {}
    for name, digest in (summary.get("artifacts") or {}).items() if summary.get("run_dir") else ():
        path = Path(summary["run_dir"]) / name
        if not path.is_file() or sha256_file(path) != digest:
            run.verdict, run.reason = "failed", f"artifact {name} changed or vanished after the run"
            run.errors.append(run.reason)
            continue
        sources[name] = path
    return sources
