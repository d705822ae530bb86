"""The provenance a receipt carries: what ran, where, with which versions, and its artifacts.

:func:`receipt_metadata` is ``metadata.receipt`` of one executed notebook;
:func:`artifact_sources` checks that the run artifacts a kernel recorded are
still what it recorded before they are copied into the receipt.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
import threading
from pathlib import Path
from typing import Any

from hermes_nb import __version__
from hermes_nb.core.facts import data_dir, plain_http_warning
from hermes_nb.core.io import json_digest, sha256_file
from hermes_nb.core.redaction import Redactor
from hermes_nb.nbrun.execute import NotebookRun
from hermes_nb.nbrun.kernels import KernelPool
from hermes_nb.receipts.verdict import operator_action, proxy_state
from hermes_nb.receipts.write import RECEIPT_SCHEMA
from hermes_nb.target import Target

__all__ = ["receipt_metadata", "artifact_sources", "environment_digest", "prefetch_environment_digest"]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _template_label(path: Path) -> str:
    """``hermes_nb/data/notebooks/<name>.ipynb`` for a shipped notebook, else the file name."""
    try:
        return "hermes_nb/data/" + path.resolve().relative_to(data_dir().resolve()).as_posix()
    except ValueError:
        return path.name


_digest_lock = threading.Lock()


def environment_digest() -> dict[str, Any]:
    """The installed distributions as ``name==version`` lines: how many, and the sha256 of the sorted list.

    Reading every distribution's name and version takes ~0.01 s: computed once per process (the smoke starts it in the
    background once its notebooks run, :func:`prefetch_environment_digest`); concurrent callers wait for it.
    """
    with _digest_lock:
        return _environment_digest()


_prefetch_lock = threading.Lock()
_prefetched = threading.Event()


def prefetch_environment_digest() -> None:
    """Compute :func:`environment_digest` in the background, once per process (later calls do nothing)."""
    with _prefetch_lock:
        if _prefetched.is_set():
            return
        _prefetched.set()
    threading.Thread(target=environment_digest, name="hermes-nb-env-digest", daemon=True).start()


@functools.lru_cache(maxsize=1)
def _environment_digest() -> dict[str, Any]:
    found: set[str] = set()
    for dist in importlib.metadata.distributions():
        name, version = _name_and_version(dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "")
        if name:
            found.add(f"{name.lower()}=={version}")
    pins = sorted(found)
    return {"packages": len(pins), "sha256": json_digest(pins)}


def _name_and_version(metadata: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from a distribution's core metadata: the first of each in its header block (what
    ``dist.metadata[...]`` gives, without the e-mail parser reading every header and the description: 4x less)."""
    name = version = None
    for line in metadata.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, sep, value = line.partition(":")
        if not sep or line[:1] in " \t":  # a continuation line
            continue
        key = key.strip().lower()
        if key == "name" and name is None:
            name = value.strip()
        elif key == "version" and version is None:
            version = value.strip()
    return name, version


def receipt_metadata(run: NotebookRun, *, run_id: str, target: Target, pool: KernelPool,
                     timeout_s: float, redactor: Redactor, endpoint_origin: str | None = None) -> dict[str, Any]:
    summary = run.summary or {}
    papermill_meta = (run.nb.metadata.get("papermill", {}) if run.nb is not None else {})
    params = redactor.data(run.parameters)
    return {
        "schema": RECEIPT_SCHEMA,
        "notebook": run.name,
        "run_id": run_id,
        "verdict": run.verdict,
        "status": run.status,
        "reason": run.reason,
        "errors": run.errors,
        # a blocked notebook is an expected outcome with an action: said once, up front (index.html, CI)
        "operator_action": operator_action(summary, run.reason, run.errors) if run.verdict == "blocked" else None,
        "target_kind": target.kind,
        "proxy_state": proxy_state(summary),
        "target_evidence": target.evidence,
        "endpoint": summary.get("endpoint") or target.endpoint,
        "endpoint_origin": endpoint_origin,
        "target_warnings": [w for w in [plain_http_warning(summary.get("endpoint") or target.endpoint)] if w],
        "model": summary.get("model") or (run.parameters.get("config") or {}).get("model"),
        "hermes_nb_version": __version__,
        "python": {"version": sys.version.split()[0], "implementation": sys.implementation.name},
        "kernel": {**pool.describe(), "language_version":
                   (run.nb.metadata.get("language_info", {}).get("version") if run.nb is not None else None)},
        "papermill_version": _version("papermill"),
        "nbclient_version": _version("nbclient"),
        # the release under test: the target's (the rig, --hermes-bin), never a local install's
        "hermes_agent_version": target.release,
        "hermes_agent_version_source": target.release_source,
        "provider": target.provider or summary.get("provider"),
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "duration_s": round(run.duration_s, 3),
        "execution_timeout_s": timeout_s,
        "template": {"path": _template_label(run.template), "sha256": sha256_file(run.template)},
        "parameters": params,
        "parameters_sha256": json_digest(params),
        "environment": environment_digest(),
        "artifacts": dict(summary.get("artifacts") or {}),
        "papermill_exception_recorded": papermill_meta.get("exception"),
        "summary": {k: v for k, v in summary.items() if k not in ("run_dir",)},
    }


def artifact_sources(run: NotebookRun) -> dict[str, Path]:
    """The run artifacts to copy into the receipt; each must still match the digest the kernel recorded."""
    summary = run.summary or {}
    run_dir = summary.get("run_dir")
    sources: dict[str, Path] = {}
    if not run_dir:
        return sources
    for name, digest in (summary.get("artifacts") or {}).items():
        path = Path(run_dir) / name
        if not path.is_file() or sha256_file(path) != digest:
            run.verdict, run.reason = "failed", f"artifact {name} changed or vanished after the run"
            run.errors.append(run.reason)
            continue
        sources[name] = path
    return sources
