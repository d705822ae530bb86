"""The prompt a mission becomes (uh-contract §4): UH's sections in order, then the sentinel instruction."""

from __future__ import annotations

from hermes_nb.harness.mission import Mission, Workflow
from hermes_nb.wire.sentinel import runtime_final_message_instruction

__all__ = ["MISSION_INSTRUCTION", "render_prompt"]

#: The fixed line before the sentinel instruction (uh-contract §4 item 4).
MISSION_INSTRUCTION = "Carry out the mission above and produce the expected artifacts."


def _section(lines: list[str]) -> str:
    return "\n".join(lines) + "\n\n"


def render_prompt(mission: Mission, workflow: Workflow | None = None) -> str:
    """The user message: UH's sections in order, then the sentinel instruction."""
    parts: list[str] = []
    head = [f"# Mission: {mission.display_name}"]
    if mission.description:
        head += ["", mission.description.strip()]
    parts.append(_section(head))
    if workflow is not None and workflow.phases:
        lines = [f"## Workflow: {workflow.name}", ""]
        for phase in workflow.phases:
            lines.append(f"### {phase.name} ({phase.agent_role})")
            if phase.description:
                lines.append(phase.description.strip())
        parts.append(_section(lines))
    if mission.issues:
        parts.append(_section(["## Related Issues"] + [
            f"- [{i.source}] {i.reference}" + (f" ({i.url})" if i.url else "") for i in mission.issues
        ]))
    if mission.read_first:
        parts.append(_section(["## Read First"] + [f"- {p}" for p in mission.read_first]))
    if mission.expected_artifacts:
        parts.append(_section(["## Expected Artifacts"] + [
            f"- {a.path}" + (f" ({a.type})" if a.type else "") for a in mission.expected_artifacts
        ]))
    checks = mission.verification.checks or []
    if checks:
        parts.append(_section(["## Verification Checks"] + [f"- {c}" for c in checks]))
    parts.append(MISSION_INSTRUCTION + "\n")
    parts.append(runtime_final_message_instruction())
    return "".join(parts)
