"""Kernel-side helpers for the notebooks: target, config, digests, the verdict cell.

The notebooks in ``notebooks/`` only call these functions and
:mod:`hermes_nb.display`; every decision lives here and is unit tested.

The verdict cell displays one output whose ``metadata`` carries the full
summary under :data:`VERDICT_MIME`. Papermill cannot hand values back, so the
smoke runner reads that output from the executed notebook. The human
``text/plain`` and ``text/html`` representations of the same output hold
only stable fields, so nbval compares them (with the sanitize file) while
the machine summary with its digests and timings stays out of the diff.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping

from .errors import ConfigError, NotebookFailed
from .redact import Redactor

if TYPE_CHECKING:  # config (pydantic, httpx) is imported where it is used: the smoke runner imports this module
    from .config import HermesProxyRuntimeConfig

__all__ = [
    "VERDICT_MIME",
    "VERDICT_SCHEMA",
    "VERDICTS",
    "ARTIFACT_NAMES",
    "Target",
    "start_target",
    "runtime_config",
    "sha256_bytes",
    "sha256_file",
    "artifact_digests",
    "verdict_summary",
    "record_verdict",
    "find_verdict",
    "load_job",
    "wire_summary",
    "check_summary",
    "run_summary",
]

VERDICT_MIME = "application/vnd.hermes-nb.verdict+json"
VERDICT_SCHEMA = "hermes-nb.verdict.v1"
VERDICTS = ("passed", "failed", "blocked")
Verdict = Literal["passed", "failed", "blocked"]
#: the run artifacts whose digests a receipt carries (uh-contract §3)
ARTIFACT_NAMES = ("runtime-result.yaml", "runtime.stdout.log", "runtime-final.txt")
TOKEN_ENV = "HERMES_NB_AUTH_TOKEN"


@dataclass
class Target:
    """The endpoint a notebook talks to; ``close()`` stops an embedded emulator."""

    endpoint: str
    kind: Literal["emulator", "given"]
    profile: str | None = None
    scenario: str | None = None
    handle: Any = None
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)

    @property
    def hermes_bin(self) -> Literal[False] | None:
        """For ``adapter_check``: look up the local hermes only for a real proxy (``False`` skips it)."""
        return None if self.kind == "given" else False

    def temp_dir(self, prefix: str = "hermes-nb-") -> str:
        """A temporary directory removed by :meth:`close`."""
        path = tempfile.mkdtemp(prefix=prefix)
        self._stack.callback(shutil.rmtree, path, True)
        return path

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_target(endpoint: str | None, *, profile: str = "hermes-agent", scenario: str = "ok",
                 seed: int = 0) -> Target:
    """``endpoint`` None → start the embedded emulator (kept until ``close()``)."""
    if endpoint:
        return Target(endpoint=endpoint.rstrip("/"), kind="given")
    from .emulator import serve

    stack = ExitStack()
    handle = stack.enter_context(serve(profile=profile, scenario=scenario, seed=seed))
    url = getattr(handle, "endpoint", None) or str(handle)
    return Target(endpoint=url, kind="emulator", profile=profile, scenario=scenario, handle=handle, _stack=stack)


def runtime_config(endpoint: str, model: str, *, manifest: str | None = None,
                   request_timeout_s: float | None = None,
                   environ: Mapping[str, str] | None = None) -> HermesProxyRuntimeConfig:
    """Build the runtime config inside the kernel; the token comes from the env or the manifest, never a parameter."""
    from .config import load_manifest, merge_runtime_config

    env = os.environ if environ is None else environ
    base: dict[str, Any] = {}
    if manifest:
        loaded = load_manifest(manifest)
        base = dict(loaded.config.runtime_config) if loaded.config else {}
    layer: dict[str, Any] = {"endpoint": endpoint, "model": model}
    if request_timeout_s is not None:
        if request_timeout_s <= 0:
            raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}")
        layer["request_timeout_ms"] = int(request_timeout_s * 1000)
    token = env.get(TOKEN_ENV)
    if token:
        layer["auth_token"] = token
    return merge_runtime_config(base, layer)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def artifact_digests(run_dir: str | os.PathLike[str] | None,
                     names: tuple[str, ...] = ARTIFACT_NAMES) -> dict[str, str]:
    """sha256 of each run artifact present in ``run_dir`` (missing ones are left out)."""
    if run_dir is None:
        return {}
    base = Path(run_dir)
    return {name: sha256_file(base / name) for name in names if (base / name).is_file()}


def verdict_summary(job: str, status: str, *, reason: str, errors: list[str] | None = None,
                    warnings: list[str] | None = None, endpoint: str | None = None, model: str | None = None,
                    target: str | None = None, hermes_version: str | None = None,
                    artifacts: Mapping[str, str] | None = None, run_dir: str | None = None,
                    details: Mapping[str, Any] | None = None,
                    redactor: Redactor | None = None) -> dict[str, Any]:
    """The machine summary of one notebook job (redacted)."""
    if status not in VERDICTS:
        raise ValueError(f"unknown verdict {status!r} (expected one of {', '.join(VERDICTS)})")
    summary: dict[str, Any] = {
        "schema": VERDICT_SCHEMA,
        "job": job,
        "verdict": status,
        "reason": reason,
        "errors": list(errors or []),
        "warnings": list(warnings or []),
        "endpoint": endpoint,
        "model": model,
        "target": target,
        "hermes_version": hermes_version,
        "artifacts": dict(artifacts or {}),
        "run_dir": run_dir,
        "details": dict(details or {}),
    }
    return (redactor or Redactor()).data(summary)


def record_verdict(summary: Mapping[str, Any]) -> None:
    """Display the verdict output, then raise :class:`NotebookFailed` unless it passed."""
    from IPython.display import display

    from .display import verdict_html

    line = f"verdict: {summary['verdict']} ({summary['reason']})"
    display({"text/plain": line, "text/html": verdict_html(summary)}, raw=True,
            metadata={VERDICT_MIME: dict(summary)})
    if summary["verdict"] != "passed":
        first = (summary.get("errors") or [summary["reason"]])[0]
        raise NotebookFailed(f"{summary['job']} {summary['verdict']}: {first}")


def find_verdict(nb: Mapping[str, Any]) -> dict[str, Any] | None:
    """The last verdict summary recorded in an executed notebook, or None."""
    found: dict[str, Any] | None = None
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            meta = output.get("metadata") or {}
            value = meta.get(VERDICT_MIME)
            if isinstance(value, Mapping) and value.get("schema") == VERDICT_SCHEMA:
                found = dict(value)
    return found


# --------------------------------------------------------------------------- the three jobs

def load_job(mission: str | None, prompt: str) -> Any:
    """The mission at ``mission`` (a mission.yaml path), else an ad-hoc mission from ``prompt``."""
    from .mission import Mission, load_mission

    return load_mission(mission) if mission else Mission.adhoc(prompt)


def wire_summary(report: Any, drift: list[Any], *, target: Target, model: str, contract: str) -> dict[str, Any]:
    """Spike verdict: unreachable → blocked; any drift from the contract → failed; else passed."""
    drift_lines = [str(d) for d in drift]
    if not getattr(report, "reachable", False):
        status, reason = "blocked", "unreachable"
        errors = [f"hermes-proxy: endpoint unreachable: {target.endpoint} (is `hermes proxy start` running?)"]
    elif drift_lines:
        status, reason = "failed", "drift"
        errors = [f"wire drift from {contract}: {line}" for line in drift_lines]
    else:
        status, reason, errors = "passed", "matches-contract", []
    return verdict_summary(
        "wire_format_spike", status, reason=reason, errors=errors, warnings=list(getattr(report, "warnings", [])),
        endpoint=target.endpoint, model=model, target=target.kind,
        details={"contract": contract, "state": getattr(report, "state", None),
                 "bearer_required": getattr(report, "bearer_required", None),
                 "stream_failure_shape": getattr(report, "stream_failure_shape", None),
                 "server": getattr(report, "server", None), "drift": drift_lines},
    )


_CHECK_VERDICT = {"ready": "passed", "locked": "blocked", "unreachable": "blocked",
                  "misconfigured": "failed", "error": "failed"}


def check_summary(result: Any, *, target: Target) -> dict[str, Any]:
    """Adapter-check verdict: ready → passed; locked/unreachable → blocked; misconfigured/error → failed."""
    state = str(getattr(result, "state", "error"))
    return verdict_summary(
        "adapter_check", _CHECK_VERDICT.get(state, "failed"), reason=state,
        errors=list(getattr(result, "errors", [])), warnings=list(getattr(result, "warnings", [])),
        endpoint=target.endpoint, model=getattr(result, "model", None), target=target.kind,
        hermes_version=getattr(result, "hermes_version", None),
        details={"models": list(getattr(result, "models", [])), "hint": getattr(result, "hint", None),
                 "http_status": getattr(result, "http_status", None)},
    )


def run_summary(result: Any, *, target: Target, config: HermesProxyRuntimeConfig) -> dict[str, Any]:
    """E2E verdict: the runtime result's status (cancelled counts as failed) plus the artifact digests."""
    doc = dict(getattr(result, "result", {}) or {})
    status = str(doc.get("status", "failed"))
    outcome = getattr(result, "outcome", None)
    run_dir = getattr(result, "run_dir", None)
    return verdict_summary(
        "e2e_smoke", status if status in VERDICTS else "failed",
        reason=str(doc.get("reason") or getattr(outcome, "reason", None) or status),
        errors=list(doc.get("errors") or []), warnings=list(doc.get("warnings") or []),
        endpoint=config.endpoint, model=config.model, target=target.kind,
        artifacts=artifact_digests(run_dir), run_dir=str(run_dir) if run_dir else None,
        details={"run_id": getattr(result, "run_id", None), "exit_code": getattr(result, "exit_code", None),
                 "final_message": getattr(outcome, "final_message", None), "usage": doc.get("usage")},
        redactor=Redactor(config.secrets()),
    )
