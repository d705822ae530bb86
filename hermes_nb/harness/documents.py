"""UH's run documents (uh-contract §3): their models, and the builders that write through them.

Every document a run writes (``latest.json``, ``runs/index.json`` entries,
``runtime-session.yaml``, ``runtime-result.yaml``) is built by a function here
from these models, so what we write is what UH reads: a field UH does not
know, or a ``null`` where UH wants the key absent, fails at build time.

UH's optional fields are zod ``.optional()``: absent is fine, ``null`` is not
(only ``latest.json``'s ``finished_at`` is nullable). The models mirror that
by typing optional fields without ``None`` and defaulting them to :data:`_ABSENT`
(``None``; pydantic does not validate defaults), so an explicit ``null`` fails.

The UH models are strict. hermes_nb's runtime-result carries a few documented
extra fields (:data:`RESULT_EXTRA_FIELDS`); :func:`validate_result` checks the
UH part strictly and the extras by name and type.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hermes_nb.core.model import StrictModel

__all__ = [
    "latest_run",
    "index_entry",
    "runtime_session",
    "runtime_result",
    "LatestRun",
    "RunsIndex",
    "RunsIndexEntry",
    "RuntimeSession",
    "RuntimeResult",
    "HermesRuntimeResult",
    "Verdict",
    "RESULT_EXTRA_FIELDS",
    "validate_result",
]

Timestamp = str
RunStatus = Literal["running", "passed", "failed", "blocked", "cancelled", "timeout"]
_TS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
#: the default of a UH field that may be absent but never null: None, which pydantic does not validate (a default),
#: typed Any because it is not a value of the field's type (an explicit null is validated, and fails)
_ABSENT: Any = None


class LatestRun(StrictModel):
    schema_version: Literal["uh.latest-run.v0"]
    run_id: str
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp | None = Field(None, pattern=_TS)
    status: RunStatus


class RunsIndexEntry(StrictModel):
    run_id: str
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp = Field(_ABSENT, pattern=_TS)
    status: RunStatus
    runtime: str = _ABSENT
    archived: bool = _ABSENT
    replay_of: str = _ABSENT


class RunsIndex(StrictModel):
    schema_version: Literal["uh.runs-index.v0"]
    runs: list[RunsIndexEntry]


class RuntimeSession(StrictModel):
    schema_version: Literal["uh.runtime-session.v0"]
    mission_id: str
    runtime: str
    status: Literal["planned", "running", "succeeded", "failed"]
    command: str = _ABSENT
    args: list[str] = _ABSENT
    exit_code: int = _ABSENT
    started_at: Timestamp = Field(_ABSENT, pattern=_TS)
    finished_at: Timestamp = Field(_ABSENT, pattern=_TS)
    stdout_path: str = _ABSENT
    stderr_path: str = _ABSENT


class Verdict(StrictModel):
    value: str
    rationale: str
    recorded_by: str
    recorded_at: Timestamp


class RuntimeResult(StrictModel):
    schema_version: Literal["uh.runtime-result.v0"]
    mission_id: str
    runtime: str
    status: Literal["passed", "failed", "blocked", "cancelled"]
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp = Field(..., pattern=_TS)
    exit_code: int = _ABSENT
    prompt_path: str
    stdout_path: str
    stderr_path: str
    diff_path: str = _ABSENT
    errors: list[str] = Field(default_factory=list)
    notes: list[str] = _ABSENT
    verdict: Verdict = _ABSENT


class HermesRuntimeResult(RuntimeResult):
    """UH's result plus hermes_nb's documented extras."""

    warnings: list[str] = Field(default_factory=list)
    reason: str | None = None
    hint: str | None = None
    http_status: int | None = None
    error_type: str | None = None
    retry_after_s: float | None = None
    usage: dict[str, Any] | None = None
    run_id: str | None = None
    #: the proxy's provider (``nous``, ``xai``): configured, or named by the proxy's own error
    provider: str | None = None


RESULT_EXTRA_FIELDS = tuple(sorted(set(HermesRuntimeResult.model_fields) - set(RuntimeResult.model_fields)))


def validate_result(doc: dict[str, Any]) -> HermesRuntimeResult:
    """Validate the UH fields strictly (unknown keys beyond the documented extras fail)."""
    RuntimeResult.model_validate({k: v for k, v in doc.items() if k not in RESULT_EXTRA_FIELDS})
    return HermesRuntimeResult.model_validate(doc)


# --------------------------------------------------------------------------- builders


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """UH's optional keys are absent, never null: drop the ``None`` ones."""
    return {k: v for k, v in fields.items() if v is not None}


def latest_run(run_id: str, started_at: str, status: str, finished_at: str | None = None) -> dict[str, Any]:
    """``latest.json`` (its ``finished_at`` is the one nullable field, always present)."""
    return LatestRun.model_validate(dict(schema_version="uh.latest-run.v0", run_id=run_id, started_at=started_at,
                                         finished_at=finished_at, status=status)).model_dump(mode="json")


def index_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """One ``runs/index.json`` entry, validated (unknown keys fail; absent stays absent)."""
    return RunsIndexEntry.model_validate(_present(entry)).model_dump(mode="json", exclude_unset=True)


def runtime_session(*, mission_id: str, runtime: str, status: str, command: str | None = None,
                    args: list[str] | None = None, exit_code: int | None = None, started_at: str | None = None,
                    finished_at: str | None = None, stdout_path: str | None = None,
                    stderr_path: str | None = None) -> dict[str, Any]:
    """``runtime-session.yaml``."""
    fields = _present(dict(command=command, args=args, exit_code=exit_code, started_at=started_at,
                           finished_at=finished_at, stdout_path=stdout_path, stderr_path=stderr_path))
    doc = dict(schema_version="uh.runtime-session.v0", mission_id=mission_id, runtime=runtime, status=status, **fields)
    return RuntimeSession.model_validate(doc).model_dump(mode="json", exclude_unset=True)


def runtime_result(*, uh: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    """``runtime-result.yaml``: UH's fields (``None`` = absent) plus hermes_nb's documented extras
    (:data:`RESULT_EXTRA_FIELDS`, always present, ``null`` when unknown)."""
    unknown = set(extras) - set(RESULT_EXTRA_FIELDS)
    if unknown:
        raise ValueError(f"not documented result extras: {', '.join(sorted(unknown))}")
    doc = HermesRuntimeResult.model_validate({"schema_version": "uh.runtime-result.v0", **_present(uh), **extras})
    return doc.model_dump(mode="json", exclude_unset=True)
