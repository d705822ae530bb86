"""Missions (``uh.mission.v0``, uh-contract §1) and the prompt one becomes (§4). Unknown keys are dropped as UH
drops them (an unknown top-level key is a warning); unlike UH, a missing workflow is a warning."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hermes_nb.core.config import format_validation_error
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import MISSIONS_RELPATH, WORKFLOWS_RELPATH
from hermes_nb.core.model import StrictModel
from hermes_nb.core.yamlio import load_yaml, read_text_file
from hermes_nb.wire.sentinel import runtime_final_message_instruction

#: the fixed line before the sentinel instruction (uh-contract §4 item 4)
MISSION_INSTRUCTION = "Carry out the mission above and produce the expected artifacts."


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)


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
        if len({w.role for w in self.workers}) != len(self.workers):
            raise ValueError("team.workers roles must be unique")
        return self


class Mission(_Loose):
    schema_version: Literal["uh.mission.v0"]
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
    capabilities: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]] = Field(default_factory=list)
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
    # legacy fields: each wins over its derived value
    issues: list[LegacyIssue] | None = None
    read_first: list[str] | None = None
    expected_artifacts: list[ExpectedArtifact] | None = None
    #: not part of the document
    source_path: Path | None = Field(None, exclude=True)
    ignored_keys: list[str] = Field(default_factory=list, exclude=True)

    @model_validator(mode="after")
    def _derive(self) -> Mission:
        if not (self.title or self.name):
            raise ValueError("a mission needs 'title' or 'name'")
        if len({c.id for c in self.acceptance_criteria}) != len(self.acceptance_criteria):
            raise ValueError("acceptance_criteria ids must be unique")
        if self.shape == "team" and self.team is None:
            raise ValueError("shape 'team' needs a 'team' object")
        derived = {"name": self.title, "description": self.objective, "read_first": list(self.context.read_first),
                   "expected_artifacts": [ExpectedArtifact(path=p) for p in self.expected_outputs.files],
                   "issues": [LegacyIssue(source=r.provider, reference=r.id, url=r.url) for r in self.issue_refs]}
        for key, value in derived.items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if self.verification.checks is None:
            self.verification.checks = [c.command or c.name for c in self.verification.required_checks]
        if not self.acceptance_criteria:
            self.acceptance_criteria = [AcceptanceCriterion(id=f"ac-{i}", description=text, severity="warn")
                                        for i, text in enumerate(self.completion_criteria, start=1)]
        return self

    @classmethod
    def adhoc(cls, prompt: str) -> Mission:
        if not prompt or prompt.isspace():
            raise ConfigError("the prompt is empty")
        return cls(schema_version="uh.mission.v0", id="adhoc", title="Ad-hoc prompt", objective=prompt)

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


_FIELDS = [name for name, f in Mission.model_fields.items() if not f.exclude]


def mission_from_document(data: Any, *, where: str = "mission", source_path: Path | None = None) -> Mission:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a mission must be a mapping, got {type(data).__name__}")
    ignored = []
    for key in data:
        if key not in _FIELDS:
            match = difflib.get_close_matches(str(key), _FIELDS, n=1, cutoff=0.75)
            ignored.append(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else ""))
    known = {k: v for k, v in data.items() if k in _FIELDS}
    also = f"; unknown key {', '.join(ignored)} ignored" if ignored else ""
    if not known.get("id"):
        raise ConfigError(f"{where}: missing mission id ('id' is required and non-empty){also}")
    try:
        mission = Mission.model_validate(known)
    except ValidationError as exc:
        problems = [p + also for p in format_validation_error(exc, where=where, model=Mission).problems]
        raise ConfigError("; ".join(problems), problems=problems) from None
    mission.source_path, mission.ignored_keys = source_path, ignored
    return mission


def load_mission(path: str | os.PathLike[str]) -> Mission:
    p = Path(path)
    p = p / "mission.yaml" if p.is_dir() else p
    data = load_yaml(read_text_file(p, f"{p}: mission"), where=str(p))
    return mission_from_document(data, where=str(p), source_path=p.resolve())


def harness_root_of(mission: Mission) -> Path | None:
    """``R`` when the mission was read from ``R/.harness/missions/<dir>/mission.yaml``."""
    src = mission.source_path
    if src is None or src.name not in ("mission.yaml", "mission.yml") or len(src.parents) < 4:
        return None
    return src.parents[3] if src.parents[1].parts[-2:] == MISSIONS_RELPATH.parts else None


def load_workflow(root: str | Path, mission: Mission) -> tuple[Workflow | None, list[str]]:
    """``.harness/workflows/<workflow_profile>.yaml`` under ``root`` (a missing file: a warning)."""
    profile = mission.workflow_profile
    if not profile:
        return None, []
    if "/" in profile or "\\" in profile or profile.startswith("."):
        raise ConfigError(f"workflow_profile {profile!r} must be a plain name")
    base = Path(root) / WORKFLOWS_RELPATH
    path = next((base / f"{profile}{ext}" for ext in (".yaml", ".yml") if (base / f"{profile}{ext}").is_file()), None)
    if path is None:
        return None, [f"workflow {profile!r} not found at {base / (profile + '.yaml')}; prompt rendered without it"]
    data = load_yaml(read_text_file(path, f"{path}: workflow"), where=str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a workflow must be a mapping")
    try:
        return Workflow.model_validate({"name": profile, **data}), []
    except ValidationError as exc:
        raise format_validation_error(exc, where=str(path), model=Workflow) from None


def mission_warnings(mission: Mission) -> list[str]:
    """Ignored unknown keys, and what the hermes-proxy runtime cannot honour."""
    where = str(mission.source_path) if mission.source_path else "mission"
    out = [f"{where}: unknown key {key} ignored (as UH does)" for key in mission.ignored_keys]
    req = mission.runtime_requirements
    if req is not None and (req.needs_shell or req.needs_fs_write):
        missing = " and ".join(n for n, wanted in (("shell", req.needs_shell), ("fs_write", req.needs_fs_write))
                               if wanted)
        out.append(f"mission declares runtime_requirements needing {missing}; the hermes-proxy runtime "
                   "only offers network (the model answers in text; nothing is executed or written)")
    return out


def render_prompt(mission: Mission, workflow: Workflow | None = None) -> str:
    """The user message: UH's sections in order (empty ones left out), then the sentinel instruction."""
    head = [f"# Mission: {mission.display_name}"] + (["", mission.description.strip()] if mission.description else [])
    sections = [head]
    if workflow is not None and workflow.phases:
        lines = [f"## Workflow: {workflow.name}", ""]
        for phase in workflow.phases:
            lines += [f"### {phase.name} ({phase.agent_role})", *([phase.description.strip()]
                                                                  if phase.description else [])]
        sections.append(lines)
    listed = {
        "## Related Issues": [f"- [{i.source}] {i.reference}" + (f" ({i.url})" if i.url else "")
                              for i in mission.issues or []],
        "## Read First": [f"- {p}" for p in mission.read_first or []],
        "## Expected Artifacts": [f"- {a.path}" + (f" ({a.type})" if a.type else "")
                                  for a in mission.expected_artifacts or []],
        "## Verification Checks": [f"- {c}" for c in mission.verification.checks or []]}
    sections += [[heading, *items] for heading, items in listed.items() if items]
    parts: list[str] = []  # joined once: a long description is copied once, into the prompt
    for lines in sections:
        parts += [piece for i, line in enumerate(lines) for piece in (("\n", line) if i else (line,))] + ["\n\n"]
    return "".join([*parts, MISSION_INSTRUCTION, "\n", runtime_final_message_instruction()])
