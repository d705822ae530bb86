"""What a run will send (its plan) and what a run or a dry run hands back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hermes_nb.core.facts import RUN_ARTIFACTS, RUNTIME
from hermes_nb.core.io import sha256_file
from hermes_nb.core.model import Shown
from hermes_nb.core.records import Exchange, Outcome
from hermes_nb.core.redaction import Redactor


def artifact_digests(run_dir: Any, names: tuple[str, ...] = RUN_ARTIFACTS) -> dict[str, str]:
    """sha256 of each run artifact present in ``run_dir``."""
    if run_dir is None:
        return {}
    return {name: sha256_file(Path(run_dir) / name) for name in names if (Path(run_dir) / name).is_file()}


class RunPlan(BaseModel):
    """What a run will send, with no secret and no copy of the prompt: ``body`` and ``args`` carry
    ``prompt_reference`` where the user message goes, ``prompt`` is the digest and size of what ``prompt.md``
    holds; ``request_prompt`` (never dumped) is the prompt as sent, the user's own words unredacted."""

    mission_id: str
    runtime: str = RUNTIME
    endpoint: str
    url: str
    method: str = "POST"
    command: str
    args: list[str]
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: dict[str, Any]
    timeouts: dict[str, int | float]
    warnings: list[str] = Field(default_factory=list)
    request_prompt: str = Field(exclude=True, repr=False)
    #: ``<prompt.md: N bytes, sha256:…>``: what records hold instead of the prompt
    prompt_reference: str = Field(exclude=True)


@dataclass
class RunResult(Shown):
    """A finished run: the runtime-result document and where it lives."""

    result: dict[str, Any]
    run_dir: Path
    run_id: str
    exit_code: int
    plan: RunPlan
    outcome: Outcome | None = None
    exchange: Exchange | None = None
    text: str = ""

    @property
    def status(self) -> str:
        return str(self.result["status"])

    def to_json(self) -> dict[str, Any]:
        return {**self.result, "run_dir": str(self.run_dir)}

    def _repr_text_(self) -> str:
        reason = self.result.get("reason") or (self.outcome.reason if self.outcome else None)
        took = f", {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return Redactor().text(f"RunResult({self.status}{f' ({reason})' if reason else ''}, "
                               f"mission {self.result.get('mission_id')}, exit {self.exit_code}{took}, "
                               f"{len(self.text)} chars of assistant text)")

    __repr__ = _repr_text_  # one safe line, not the dataclass's dump of the whole document and text


@dataclass
class DryRunResult:
    plan: RunPlan
    run_dir: Path
    run_id: str
    session: dict[str, Any]
    exit_code: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": True, "run_id": self.run_id, "run_dir": str(self.run_dir), "session": self.session,
                "plan": self.plan.model_dump(mode="json")}
