"""What a finished run (or a dry run) hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.records import Exchange, Outcome
from hermes_nb.harness.plan import RunPlan

__all__ = ["RunResult", "DryRunResult"]


@dataclass
class RunResult:
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
        """The runtime-result document plus ``run_dir`` (absolute) for ``--json``."""
        return {**self.result, "run_dir": str(self.run_dir)}


@dataclass
class DryRunResult:
    plan: RunPlan
    run_dir: Path
    run_id: str
    session: dict[str, Any]
    exit_code: int = 0
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "session": self.session,
            "plan": self.plan.model_dump(mode="json"),
        }
