"""Run the notebooks headlessly through papermill and keep them as receipts.

The three notebooks run **concurrently**, each in its own thread with its own
fresh kernel (:class:`~hermes_nb.kernels.KernelPool`); nothing is shared
between receipts and the process never ``chdir``s (absolute paths only; the
kernel's working directory is a private temp dir). One notebook's execution
and its truthful verdict: :mod:`hermes_nb.nbexec`; the receipts:
:mod:`hermes_nb.receipts`.

Target kinds: ``emulator`` (each notebook starts its own, or an endpoint that
turns out to answer from hermes_nb's emulator), ``rig`` (the real proxy rig)
and ``live``. A ``live`` target is checked first (:func:`detect_emulator`):
the promotion gate only accepts live receipts, so pointing ``--endpoint`` at
an emulator must not produce one.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .artifacts import new_run_id
from .errors import SecretLeak, UsageError
from .kernels import KernelPool
from .nbexec import NotebookRun, decide_verdict, execute_notebook, overall_verdict
from .nbkit import sha256_bytes, sha256_file
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
    "detect_emulator",
    "confirm_target",
    "execute_notebook",
    "run_smoke",
    "run_notebooks",
]

NOTEBOOKS = ("wire_format_spike", "adapter_check", "e2e_smoke")
TARGET_KINDS = ("emulator", "rig", "live")
REPO_ROOT = Path(__file__).resolve().parent.parent


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
    #: why the kind is what it is when it was not taken as given (see :func:`confirm_target`)
    evidence: str | None = None


@dataclass
class SmokeResult:
    verdict: str
    run_id: str
    out_dir: Path
    runs: list[NotebookRun]
    duration_s: float
    #: the target the receipts name (a ``live`` target found to be an emulator is ``emulator`` here)
    target: SmokeTarget = field(default_factory=SmokeTarget)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "run_id": self.run_id,
            "target_kind": self.target.kind,
            "endpoint": self.target.endpoint,
            "target_evidence": self.target.evidence,
            "out_dir": str(self.out_dir),
            "duration_s": round(self.duration_s, 3),
            "receipts": [
                {"notebook": r.name, "path": str(r.receipt_path) if r.receipt_path else None,
                 "verdict": r.verdict, "status": r.status, "reason": r.reason,
                 "duration_s": round(r.duration_s, 3)}
                for r in self.runs
            ],
        }


# --------------------------------------------------------------------------- target

#: a scenario name no emulator knows: hermes_nb's emulator answers it with 400 ``unknown_scenario``
PROBE_SCENARIO = "hermes-nb-target-check"


def detect_emulator(endpoint: str, *, auth_token: str | None = None, transport: Any = None,
                    deadline_s: float = 5.0) -> str | None:
    """Evidence that ``endpoint`` answers from hermes_nb's emulator, else None.

    ``GET /models`` naming an unknown scenario in ``X-Hermes-Emulator-Scenario``: the emulator (every
    profile) answers 400 ``unknown_scenario``; the real proxy forwards the header to its upstream, so a
    real proxy in front of the emulator (the rig) is caught too, while a real upstream ignores it. The
    hermes-agent profile is byte-identical to the real proxy otherwise (Server header, ``/health``), so
    nothing else tells them apart. Unreachable or any other answer: None.
    """
    from .client import HermesClient
    from .config import HermesProxyRuntimeConfig
    from .emulator.scenarios import SCENARIO_HEADER

    config = HermesProxyRuntimeConfig(endpoint=endpoint, model="hermes-nb-target-check",
                                      **({"auth_token": auth_token} if auth_token else {}))
    with HermesClient(config, transport=transport) as client:
        exchange = client.request("GET", "/models", headers={SCENARIO_HEADER: PROBE_SCENARIO},
                                  deadline_s=deadline_s)
    code = exchange.envelope.code if exchange.envelope is not None else None
    if exchange.status == 400 and code == "unknown_scenario":
        return (f"GET {config.endpoint}/models with {SCENARIO_HEADER}: {PROBE_SCENARIO} answered 400 "
                "unknown_scenario: the answers come from hermes_nb's emulator (directly or behind a proxy)")
    return None


def confirm_target(target: SmokeTarget, *, transport: Any = None) -> SmokeTarget:
    """A ``live`` target whose endpoint answers from the emulator becomes kind ``emulator`` (with evidence)."""
    if target.kind != "live" or not target.endpoint:
        return target
    token = next((s for s in target.secrets if s), None)
    evidence = detect_emulator(target.endpoint, auth_token=token, transport=transport)
    if evidence is None:
        return target
    return replace(target, kind="emulator", hermes_version=None, evidence=evidence)


# --------------------------------------------------------------------------- receipts

def _version(dist: str) -> str | None:
    import importlib.metadata

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
        "target_evidence": target.evidence,
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
              progress: Callable[[str], None] | None = None, run_id: str | None = None,
              confirm: bool = True) -> SmokeResult:
    """Execute the notebooks concurrently and write one receipt each, plus the index.

    ``confirm``: check a ``live`` target first (:func:`confirm_target`); pass False only for a target
    that already went through it.
    """
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
    target = confirm_target(target) if confirm else target
    if target.evidence:
        say(f"target kind: emulator ({target.evidence})")
    started = datetime.now(timezone.utc)
    run_id = run_id or new_run_id(started)
    out_dir = _writable_dir(Path(out_dir).resolve())
    receipt_dir = out_dir / started.strftime("%Y-%m-%d") / run_id
    redactor = Redactor(target.secrets)
    renderer = HtmlRenderer() if html else None
    work = Path(tempfile.mkdtemp(prefix="hermes-nb-smoke-"))
    runs: list[NotebookRun] = []
    interrupted = False
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
                except (SecretLeak, OSError) as exc:
                    reason = str(exc) if isinstance(exc, SecretLeak) else f"receipt not written: {exc}"
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
                    runs = [f.result() for f in futures]
                except KeyboardInterrupt:  # Ctrl-C: kill the kernels, keep the receipts, then re-raise
                    interrupted = True
                    say("interrupted: stopping the kernels; the receipts say so")
                    pool.cancel()
                    runs = [f.result() for f in futures]
        entries = [index_entry(out_dir, *r.written) for r in runs if r.written is not None]
        append_index(out_dir, entries, redactor=redactor)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in runs:
        r.nb = r.written = None  # the receipts on disk are the record; drop the in-memory copies
    if interrupted:
        raise KeyboardInterrupt
    verdict = overall_verdict([r.verdict for r in runs])
    return SmokeResult(verdict, run_id, out_dir, runs, time.perf_counter() - t0, target)


def _writable_dir(path: Path) -> Path:
    """``path`` created if needed and writable, else a usage error before any notebook runs."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(f"--out {path}: not a writable directory ({exc.strerror or exc})") from None
    return path


def _empty_notebook(template: Path) -> Any:
    import nbformat

    return nbformat.read(str(template), as_version=4)


#: the name the team brief uses for the runner
run_notebooks = run_smoke
