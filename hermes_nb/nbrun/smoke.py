"""Run the notebooks headlessly through papermill and keep them as receipts.

The notebooks run concurrently, each on a fresh kernel, against one target established before them
(:func:`hermes_nb.target.establish`), handed to each as a parameter with the resolved config. Interrupted
(``KeyboardInterrupt``, or :class:`~hermes_nb.harness.signals.Cancelled`) while they run: the kernels are stopped,
the running notebooks recorded ``cancelled`` with what they had, the finished receipts kept and indexed; nothing is
re-raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ArtifactError, HermesError, SecretLeak, UsageError
from hermes_nb.core.facts import E2E_SMOKE, NOTEBOOKS, notebooks_dir, worst_verdict
from hermes_nb.core.io import new_run_id, prove_dir
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.signals import SIGNAL_NAMES, Cancelled, SignalGuard
from hermes_nb.nbrun.execute import NotebookRun, execute_notebook
from hermes_nb.nbrun.kernels import KernelPool
from hermes_nb.nbrun.receipt_meta import artifact_sources, prefetch_environment_digest, receipt_metadata
from hermes_nb.receipts.index import append_index, index_entry, write_index_html
from hermes_nb.receipts.write import write_receipt
from hermes_nb.target import Target

__all__ = ["SmokeResult", "launch_kernels", "run_smoke"]


@dataclass
class SmokeResult:
    verdict: str
    run_id: str
    #: the receipts directory, or the storage URL the receipts were published to
    out_dir: Path | str
    runs: list[NotebookRun]
    duration_s: float
    #: the target the receipts name, established once (:func:`hermes_nb.target.establish`)
    target: Target = field(default_factory=lambda: Target(endpoint="", kind="emulator"))
    #: what the outputs must never contain (the bearer, secret headers, the rig's credentials)
    secrets: list[str] = field(default_factory=list, repr=False)
    #: the signal that stopped the run (``SIGINT``, ``SIGTERM``, ``SIGHUP``), None when it ran to the end
    cancelled_by: str | None = None
    #: outputs not written (the index on a full disk), one line each: the smoke fails naming them
    problems: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:  # a cell can end with the smoke's result (hermes_nb.nbrun.smoke_view)
        from hermes_nb.nbrun.smoke_view import smoke_html

        return smoke_html(self.to_dict())

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from hermes_nb.nbrun.smoke_view import smoke_text

        p.text("SmokeResult(...)" if cycle else smoke_text(self.to_dict()))

    @property
    def provider(self) -> str | None:
        """The provider the proxy fronts (the target's, identified once)."""
        return self.target.provider

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "run_id": self.run_id,
            "target_kind": self.target.kind,
            "provider": self.provider,
            "endpoint": self.target.endpoint,
            "target_evidence": self.target.evidence,
            "out_dir": str(self.out_dir),
            "duration_s": round(self.duration_s, 3),
            "cancelled_by": self.cancelled_by,
            "receipts": [
                {"notebook": r.name, "path": str(r.receipt_path) if r.receipt_path else None,
                 "verdict": r.verdict, "status": r.status, "reason": r.reason,
                 "duration_s": round(r.duration_s, 3)}
                for r in self.runs
            ],
        }


def launch_kernels(only: Sequence[str] | None = None, templates: Path | None = None) -> KernelPool:
    """The smoke's kernels, started now, one per notebook in its working directory: they boot while the caller
    resolves its config and target and the runner imports papermill (kept for speed: P4, docs/performance.md)."""
    names, _ = _notebooks(only, templates)
    pool = KernelPool()
    try:
        pool.launch([pool.dir / "work" / name for name in names])
    except BaseException:
        pool.close()
        raise
    return pool


def _notebooks(only: Sequence[str] | None, templates: Path | None) -> tuple[list[str], Path]:
    names = list(dict.fromkeys(only)) if only else list(NOTEBOOKS)  # a repeated --only runs once
    template_dir = templates or notebooks_dir()
    for name in names:
        if not (template_dir / f"{name}.ipynb").is_file():
            raise UsageError(f"no notebook {name!r} in {template_dir}")
    return names, template_dir


def run_smoke(target: Target, config: HermesProxyRuntimeConfig, *, out_dir: Path,
              only: Sequence[str] | None = None, timeout_s: float = 120.0, html: bool = True,
              templates: Path | None = None, progress: Callable[[str], None] | None = None, run_id: str | None = None,
              secrets: Sequence[str] = (), guard: SignalGuard | None = None,
              parameters: Mapping[str, Mapping[str, Any]] | None = None,
              kernels: KernelPool | None = None) -> SmokeResult:
    """Execute the notebooks concurrently against ``target`` (established once by the caller, ``config`` aimed at
    it) and write one receipt each, plus the index. Each job notebook gets the target and the config as
    parameters; the bearer reaches its kernel in ``HERMES_NB_AUTH_TOKEN`` only. ``secrets``: more values no output
    may contain (the rig's). ``guard``: a caller's signal guard, armed while the notebooks run (a signal then
    cancels them; at any other moment it waits until they are done). ``parameters``: notebook name → extra
    papermill parameters (the load receipt's report). ``kernels``: started already by :func:`launch_kernels` with
    the same ``only`` and ``templates``; taken over and closed.
    """
    if timeout_s <= 0:
        if kernels is not None:
            kernels.close()
        raise UsageError(f"the cell timeout must be > 0 seconds, got {timeout_s:g}")
    with kernels if kernels is not None else launch_kernels(only, templates) as pool:
        names, template_dir = _notebooks(only, templates)
        work = pool.dir / "work"
        return _run(names, template_dir, work, pool, target, config, out_dir=out_dir, timeout_s=timeout_s,
                    html=html, progress=progress, run_id=run_id, secrets=[*config.secrets(), *secrets], guard=guard,
                    parameters=parameters)


def _run(names: list[str], template_dir: Path, work: Path, pool: KernelPool, target: Target,
         config: HermesProxyRuntimeConfig, *, out_dir: Path, timeout_s: float, html: bool,
         progress: Callable[[str], None] | None, run_id: str | None, secrets: list[str], guard: SignalGuard | None,
         parameters: Mapping[str, Mapping[str, Any]] | None) -> SmokeResult:
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
    runs: list[NotebookRun] = []
    cancelled_by: str | None = None
    stopped = {"by": "SIGINT"}  # the signal's name, set before the kernels are killed (the workers read it)
    for name in names:
        params: dict[str, Any] = ({"target": target.to_parameter(), "config": config.to_parameter()}
                                  if name in NOTEBOOKS else {"endpoint": target.endpoint, "model": config.model})
        if name == E2E_SMOKE:
            (work / "e2e-root").mkdir()
            params["root"] = str(work / "e2e-root")
        params.update((parameters or {}).get(name) or {})
        runs.append(NotebookRun(name=name, template=(template_dir / f"{name}.ipynb").resolve(), parameters=params))

    def job(run: NotebookRun) -> NotebookRun:
        say(f"{run.name}: running")
        # every receipt records the environment's digest: computed once the notebooks run, off the start's path
        execute_notebook(run, pool, timeout_s=timeout_s, cwd=work / run.name, on_start=prefetch_environment_digest)
        if run.status == "interrupted":  # stopped by a signal while it ran: not a failure of the proxy
            run.verdict, run.reason = "cancelled", f"cancelled by {stopped['by']} while it ran"
        artifacts = artifact_sources(run)
        meta = receipt_metadata(run, run_id=run_id, target=target, pool=pool, timeout_s=timeout_s,
                                redactor=redactor, endpoint_origin=config.origin("endpoint"))
        nb = run.nb if run.nb is not None else _empty_notebook(run.template)
        if "papermill" in nb.metadata:
            nb.metadata["papermill"]["exception"] = run.verdict != "passed"
        if run.verdict == "blocked":  # expected, with an operator action: no red "Exception" banner
            from papermill.execute import remove_error_markers

            nb = remove_error_markers(nb)
        try:
            files = write_receipt(nb, receipt_dir, run.name, meta, redactor=redactor, page=html,
                                  artifacts=artifacts)
        except (SecretLeak, ArtifactError, OSError) as exc:
            reason = str(exc) if isinstance(exc, HermesError) else f"receipt not written: {exc}"
            run.verdict, run.reason = "failed", reason
            run.errors.append(reason)
            say(f"{run.name}: failed: {reason}")
            return run
        run.receipt_path = files.notebook
        run.written = (files, meta)
        say(f"{run.name}: {run.verdict} ({run.reason}) in {run.duration_s:.2f} s")
        return run

    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="hermes-nb-smoke") as ex:
        futures = [ex.submit(job, r) for r in runs]
        try:
            if guard is not None:
                guard.arm()  # a signal that came while the kernels started cancels here
            runs = [f.result() for f in futures]
        except (KeyboardInterrupt, Cancelled) as exc:  # kill the kernels, keep and index the receipts
            cancelled_by = stopped["by"] = SIGNAL_NAMES.get(getattr(exc, "signum", 2), "SIGINT")
            say(f"{cancelled_by}: stopping the kernels; the receipts of the running notebooks say cancelled")
            pool.cancel()
            runs = [f.result() for f in futures]
        finally:
            if guard is not None:
                guard.armed = False  # from here on a signal waits: the receipts and index get written
    entries = [index_entry(out_dir, *r.written) for r in runs if r.written is not None]
    problems: list[str] = []
    try:
        append_index(out_dir, entries, redactor=redactor)
        write_index_html(out_dir, redactor=redactor)  # DIR/index.html: each run's verdicts together
    except (ArtifactError, OSError) as exc:  # e.g. the disk filled up: the smoke fails naming the file
        problems.append(str(exc) if isinstance(exc, ArtifactError) else f"receipts index not written: {exc}")
    for r in runs:
        r.nb = r.written = None  # the receipts on disk are the record; drop the in-memory copies
    verdict = "cancelled" if cancelled_by else worst_verdict(r.verdict for r in runs)
    return SmokeResult(verdict, run_id, out_dir, runs, time.perf_counter() - t0, target, secrets, cancelled_by,
                       problems)


def _empty_notebook(template: Path) -> Any:
    import nbformat

    return nbformat.read(str(template), as_version=4)
