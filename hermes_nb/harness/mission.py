"""Missions (``uh.mission.v0``, uh-contract §1): the model and loading.

A mission is read from YAML (``load_mission``) or made from a plain prompt
(``Mission.adhoc``). Unknown keys are dropped like UH does (a mission UH runs
runs here too), except in the objects UH keeps strict (``runtime_requirements``,
``team``); an unknown *top-level* key becomes a warning naming the closest valid
key (:func:`mission_warnings`), and is named in the error when the mission then
fails to validate (``titel`` -> a missing ``title``). Unlike UH,
``workflow_profile`` is optional here and a missing workflow file is a warning.

The prompt a mission becomes is :mod:`hermes_nb.harness.prompt`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hermes_nb.core.config import format_validation_error
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import MISSIONS_RELPATH, WORKFLOWS_RELPATH
from hermes_nb.core.model import StrictModel
from hermes_nb.core.yamlio import load_yaml, read_text_file

__all__ = [
    "MISSION_SCHEMA",
    "ADHOC_ID",
    "Mission",
    "Workflow",
    "WorkflowPhase",
    "load_mission",
    "load_workflow",
    "harness_root_of",
    "mission_warnings",
    "mission_from_document",
]

MISSION_SCHEMA: Final = "uh.mission.v0"
ADHOC_ID = "adhoc"
CAPABILITY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"


class _Loose(BaseModel):
    """UH drops unknown keys in these objects; so do we (a mission UH runs runs here too)."""

    model_config = ConfigDict(extra="ignore")


class IssueRef(_Loose):
    provider: str
    id: str
    url: str | None = None


class LegacyIssue(_Loose):
    source: str
    reference: str
    url: str | None = None


class MissionContext(_Loose):
    repo_root: str | None = None
    read_first: list[str] = Field(default_factory=list)
    source_links: list[str] = Field(default_factory=list)


class Skills(_Loose):
    required: list[str] = Field(default_factory=list)
    suggested: list[str] = Field(default_factory=list)


class ExpectedOutputs(_Loose):
    files: list[str] = Field(default_factory=list)


class ExpectedArtifact(_Loose):
    path: str
    type: str | None = None


class AcceptanceCriterion(_Loose):
    id: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str
    check_command: str | None = None
    severity: Literal["block", "warn"] = "block"


class SandboxSpec(_Loose):
    backend: Literal["directory"] = "directory"
    promotion_policy: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class RequiredCheck(_Loose):
    name: str
    command: str | None = None


class Verification(_Loose):
    checks: list[str] | None = None
    required_checks: list[RequiredCheck] = Field(default_factory=list)
    review_gates: list[Any] = Field(default_factory=list)
    max_iterations: int | None = None


class RuntimeRequirements(StrictModel):
    needs_network: bool = False
    needs_shell: bool = True
    needs_fs_write: bool = True
    min_context_tokens: int | None = None
    max_cost_class: str = "premium"


class TeamWorker(StrictModel):
    role: str
    count: int | None = None
    runtime: str | None = None
    description: str | None = None


class Team(StrictModel):
    workers: list[TeamWorker] = Field(..., min_length=1)
    leader: str | None = None

    @model_validator(mode="after")
    def _unique_roles(self) -> Team:
        roles = [w.role for w in self.workers]
        if len(roles) != len(set(roles)):
            raise ValueError("team.workers roles must be unique")
        return self


class Mission(StrictModel):
    """``uh.mission.v0``. Unknown top-level keys are rejected by :func:`load_mission`."""

    schema_version: Literal["uh.mission.v0"]
    #: any non-empty string (as in UH); the artifact directory needs a path-safe name, checked at run time
    id: str = Field(..., min_length=1)
    workflow_profile: str | None = None
    title: str | None = None
    name: str | None = None
    objective: str = ""
    description: str | None = None
    priority: str | int | None = None
    issue_refs: list[IssueRef] = Field(default_factory=list)
    context: MissionContext = Field(default_factory=MissionContext)
    constraints: list[str] = Field(default_factory=list)
    completion_criteria: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    skills: Skills = Field(default_factory=Skills)
    expected_outputs: ExpectedOutputs = Field(default_factory=ExpectedOutputs)
    acceptance_criteria: list[AcceptanceCriterion] = Field(default_factory=list)
    runtime_config_overrides: dict[str, Any] = Field(default_factory=dict)
    sandbox: SandboxSpec | None = None
    verification: Verification = Field(default_factory=Verification)
    runtime_requirements: RuntimeRequirements | None = None
    tdd: dict[str, Any] | None = None
    shape: Literal["single", "team"] = "single"
    team: Team | None = None
    integration_report_path: str | None = None
    design_path: str = "design.md"
    # legacy fields (each wins over its derived value)
    issues: list[LegacyIssue] | None = None
    read_first: list[str] | None = None
    expected_artifacts: list[ExpectedArtifact] | None = None

    #: where the mission was read from (not part of the document)
    source_path: Path | None = Field(None, exclude=True)
    #: unknown top-level keys that were dropped, as "'key' (did you mean 'k'?)" (not part of the document)
    ignored_keys: list[str] = Field(default_factory=list, exclude=True)

    @model_validator(mode="after")
    def _derive(self) -> Mission:
        import re

        if not (self.title or self.name):
            raise ValueError("a mission needs 'title' or 'name'")
        for cap in self.capabilities:
            if not re.match(CAPABILITY_PATTERN, cap):
                raise ValueError(f"capability {cap!r} does not match {CAPABILITY_PATTERN}")
        ids = [c.id for c in self.acceptance_criteria]
        if len(ids) != len(set(ids)):
            raise ValueError("acceptance_criteria ids must be unique")
        if self.shape == "team" and self.team is None:
            raise ValueError("shape 'team' needs a 'team' object")
        if self.name is None:
            self.__dict__["name"] = self.title
        if self.description is None:
            self.__dict__["description"] = self.objective
        if self.read_first is None:
            self.__dict__["read_first"] = list(self.context.read_first)
        if self.expected_artifacts is None:
            self.__dict__["expected_artifacts"] = [ExpectedArtifact(path=p) for p in self.expected_outputs.files]
        if self.issues is None:
            self.__dict__["issues"] = [
                LegacyIssue(source=r.provider, reference=r.id, url=r.url) for r in self.issue_refs
            ]
        if self.verification.checks is None:
            self.verification.checks = [c.command or c.name for c in self.verification.required_checks]
        if not self.acceptance_criteria and self.completion_criteria:
            self.__dict__["acceptance_criteria"] = [
                AcceptanceCriterion(id=f"ac-{i}", description=text, severity="warn")
                for i, text in enumerate(self.completion_criteria, start=1)
            ]
        return self

    @classmethod
    def adhoc(cls, prompt: str) -> Mission:
        """A mission made from a plain prompt: id ``adhoc``, the prompt as its description."""
        if not prompt or prompt.isspace():  # (not .strip(): that would copy a big prompt)
            raise ConfigError("the prompt is empty")
        return cls(schema_version=MISSION_SCHEMA, id=ADHOC_ID, title="Ad-hoc prompt", objective=prompt)

    @property
    def display_name(self) -> str:
        return self.name or self.title or self.id


class WorkflowPhase(_Loose):
    name: str
    agent_role: str = "agent"
    description: str = ""


class Workflow(_Loose):
    name: str
    phases: list[WorkflowPhase] = Field(default_factory=list)


# --------------------------------------------------------------------------- loading

def _read_yaml(path: Path, what: str) -> Any:
    text = read_text_file(path, f"{path}: {what}")
    return load_yaml(text, where=str(path))


def _document_fields() -> list[str]:
    return [name for name, f in Mission.model_fields.items() if not f.exclude]


def mission_from_document(data: Any, *, where: str = "mission", source_path: Path | None = None) -> Mission:
    """Validate a parsed mission document (one clear line per problem)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a mission must be a mapping, got {type(data).__name__}")
    fields = _document_fields()
    ignored: list[str] = []
    for key in data:
        if key not in fields:
            match = difflib.get_close_matches(str(key), fields, n=1, cutoff=0.75)
            ignored.append(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else ""))
    known = {k: v for k, v in data.items() if k in fields}
    also = f"; unknown key {', '.join(ignored)} ignored" if ignored else ""
    if not known.get("id"):
        raise ConfigError(f"{where}: missing mission id ('id' is required and non-empty){also}")
    try:
        mission = Mission.model_validate(known)
    except ValidationError as exc:
        error = format_validation_error(exc, where=where, model=Mission)
        problems = [p + also for p in error.problems]
        raise ConfigError("; ".join(problems), problems=problems) from None
    mission.source_path = source_path
    mission.ignored_keys = ignored
    return mission


def load_mission(path: str | os.PathLike[str]) -> Mission:
    """Read ``mission.yaml`` (or a directory holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "mission.yaml"
    data = _read_yaml(p, "mission")
    return mission_from_document(data, where=str(p), source_path=p.resolve())


def harness_root_of(mission: Mission) -> Path | None:
    """``R`` when the mission was read from ``R/.harness/missions/<dir>/mission.yaml``."""
    src = mission.source_path
    if src is None or src.name not in ("mission.yaml", "mission.yml"):
        return None
    missions = src.parent.parent
    if missions.parts[-len(MISSIONS_RELPATH.parts):] == MISSIONS_RELPATH.parts:
        return missions.parents[len(MISSIONS_RELPATH.parts) - 1]
    return None


def load_workflow(root: str | Path, mission: Mission) -> tuple[Workflow | None, list[str]]:
    """``.harness/workflows/<workflow_profile>.yaml`` under ``root``; a missing file is a warning."""
    if not mission.workflow_profile:
        return None, []
    profile = mission.workflow_profile
    if "/" in profile or "\\" in profile or profile.startswith("."):
        raise ConfigError(f"workflow_profile {profile!r} must be a plain name")
    base = Path(root) / WORKFLOWS_RELPATH
    path = next((base / f"{profile}{ext}" for ext in (".yaml", ".yml") if (base / f"{profile}{ext}").is_file()), None)
    if path is None:
        return None, [f"workflow {profile!r} not found at {base / (profile + '.yaml')}; prompt rendered without it"]
    data = _read_yaml(path, "workflow")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a workflow must be a mapping")
    data.setdefault("name", profile)
    try:
        return Workflow.model_validate(data), []
    except ValidationError as exc:
        raise format_validation_error(exc, where=str(path), model=Workflow) from None


def mission_warnings(mission: Mission) -> list[str]:
    """Ignored unknown keys, and what the hermes-proxy runtime cannot honour (UH's preflight would
    refuse without --force)."""
    where = str(mission.source_path) if mission.source_path else "mission"
    out = [f"{where}: unknown key {key} ignored (as UH does)" for key in mission.ignored_keys]
    req = mission.runtime_requirements
    if req is None:
        return out
    missing = [name for name, wanted in (("shell", req.needs_shell), ("fs_write", req.needs_fs_write)) if wanted]
    if not missing:
        return out
    return out + [f"mission declares runtime_requirements needing {' and '.join(missing)}; the hermes-proxy runtime "
            "only offers network (the model answers in text; nothing is executed or written)"]
