"""Models of UH's run documents (uh-contract §3), used to validate what we write.

UH's optional fields are zod ``.optional()``: absent is fine, ``null`` is not
(only ``latest.json``'s ``finished_at`` is nullable). The models mirror that
by typing optional fields without ``None`` and defaulting them to ``None``
(pydantic does not validate defaults), so an explicit ``null`` fails.

The UH models are strict. hermes_nb's runtime-result carries a few documented
extra fields (:data:`RESULT_EXTRA_FIELDS`); :func:`validate_result` checks the
UH part strictly and the extras by name and type.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LatestRun(_Strict):
    schema_version: Literal["uh.latest-run.v0"]
    run_id: str
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp | None = Field(None, pattern=_TS)
    status: RunStatus


class RunsIndexEntry(_Strict):
    run_id: str
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp = Field(None, pattern=_TS)  # type: ignore[assignment]
    status: RunStatus
    runtime: str = None  # type: ignore[assignment]
    archived: bool = None  # type: ignore[assignment]
    replay_of: str = None  # type: ignore[assignment]


class RunsIndex(_Strict):
    schema_version: Literal["uh.runs-index.v0"]
    runs: list[RunsIndexEntry]


class RuntimeSession(_Strict):
    schema_version: Literal["uh.runtime-session.v0"]
    mission_id: str
    runtime: str
    status: Literal["planned", "running", "succeeded", "failed"]
    command: str = None  # type: ignore[assignment]
    args: list[str] = None  # type: ignore[assignment]
    exit_code: int = None  # type: ignore[assignment]
    started_at: Timestamp = Field(None, pattern=_TS)  # type: ignore[assignment]
    finished_at: Timestamp = Field(None, pattern=_TS)  # type: ignore[assignment]
    stdout_path: str = None  # type: ignore[assignment]
    stderr_path: str = None  # type: ignore[assignment]


class Verdict(_Strict):
    value: str
    rationale: str
    recorded_by: str
    recorded_at: Timestamp


class RuntimeResult(_Strict):
    schema_version: Literal["uh.runtime-result.v0"]
    mission_id: str
    runtime: str
    status: Literal["passed", "failed", "blocked", "cancelled"]
    started_at: Timestamp = Field(..., pattern=_TS)
    finished_at: Timestamp = Field(..., pattern=_TS)
    exit_code: int = None  # type: ignore[assignment]
    prompt_path: str
    stdout_path: str
    stderr_path: str
    diff_path: str = None  # type: ignore[assignment]
    errors: list[str] = Field(default_factory=list)
    notes: list[str] = None  # type: ignore[assignment]
    verdict: Verdict = None  # type: ignore[assignment]


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


RESULT_EXTRA_FIELDS = tuple(sorted(set(HermesRuntimeResult.model_fields) - set(RuntimeResult.model_fields)))


def validate_result(doc: dict[str, Any]) -> HermesRuntimeResult:
    """Validate the UH fields strictly (unknown keys beyond the documented extras fail)."""
    RuntimeResult.model_validate({k: v for k, v in doc.items() if k not in RESULT_EXTRA_FIELDS})
    return HermesRuntimeResult.model_validate(doc)
