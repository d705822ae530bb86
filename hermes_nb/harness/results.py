"""What a finished run (or a dry run) hands back to its caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.facts import RUN_ARTIFACTS
from hermes_nb.core.model import Shown
from hermes_nb.core.records import Exchange, Outcome
from hermes_nb.core.redaction import Redactor

if TYPE_CHECKING:  # an annotation only: the kit's verdict cells import this module without the harness's models
    from hermes_nb.harness.plan import RunPlan

__all__ = ["RunResult", "DryRunResult", "RUN_ARTIFACTS", "artifact_digests"]


def artifact_digests(run_dir: Any, names: tuple[str, ...] = RUN_ARTIFACTS) -> dict[str, str]:
    """sha256 of each run artifact present in ``run_dir`` (missing ones are left out)."""
    from hermes_nb.core.io import sha256_file

    if run_dir is None:
        return {}
    base = Path(run_dir)
    return {name: sha256_file(base / name) for name in names if (base / name).is_file()}


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
        """The runtime-result document plus ``run_dir`` (absolute) for ``--json``."""
        return {**self.result, "run_dir": str(self.run_dir)}

    # rich display: a cell can end with the result itself (allow-listed fields, secret shapes masked)
    def _repr_text_(self) -> str:
        reason = self.result.get("reason") or (self.outcome.reason if self.outcome else None)
        took = f", {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return Redactor().text(f"RunResult({self.status}{f' ({reason})' if reason else ''}, "
                               f"mission {self.result.get('mission_id')}, exit {self.exit_code}{took}, "
                               f"{len(self.text)} chars of assistant text)")


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
