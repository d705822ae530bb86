"""Missions (uh.mission.v0) and prompt rendering in UH's section order."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_nb import ConfigError
from hermes_nb.harness.mission import (
    MISSION_INSTRUCTION,
    Mission,
    load_mission,
    load_workflow,
    mission_from_document,
    render_prompt,
)
from hermes_nb.wire.sentinel import extract_final_message, runtime_final_message_instruction
from tests.helpers import wrap_final_message

FULL = """
schema_version: uh.mission.v0
id: m-1
title: Fix the widget
objective: Make the widget spin.
workflow_profile: tdd
issue_refs:
  - {provider: github, id: "42", url: "https://example.invalid/42"}
  - {provider: linear, id: UH-7}
context:
  read_first: [README.md, docs/x.md]
  unknown_nested: dropped like UH
expected_outputs:
  files: [src/widget.py]
verification:
  required_checks:
    - {name: unit, command: make test}
    - {name: lint}
completion_criteria: [spins, does not wobble]
acceptance_criteria: []
"""

WORKFLOW = """
name: TDD
phases:
  - {name: red, agent_role: tester, description: Write a failing test.}
  - {name: green, agent_role: coder, description: Make it pass.}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_full_mission_derives_legacy_fields(tmp_path: Path) -> None:
    mission = load_mission(write(tmp_path / "mission.yaml", FULL))
    assert mission.name == "Fix the widget"
    assert mission.description == "Make the widget spin."
    assert mission.read_first == ["README.md", "docs/x.md"]
    assert [a.path for a in mission.expected_artifacts or []] == ["src/widget.py"]
    assert [(i.source, i.reference) for i in mission.issues or []] == [("github", "42"), ("linear", "UH-7")]
    assert mission.verification.checks == ["make test", "lint"]
    assert [(c.id, c.severity) for c in mission.acceptance_criteria] == [("ac-1", "warn"), ("ac-2", "warn")]
    assert mission.source_path == (tmp_path / "mission.yaml").resolve()


def test_legacy_fields_win(tmp_path: Path) -> None:
    doc = FULL + "name: Legacy name\nread_first: [only.md]\n"
    mission = load_mission(write(tmp_path / "mission.yaml", doc))
    assert mission.name == "Legacy name"
    assert mission.read_first == ["only.md"]


def test_prompt_sections_in_uh_order(tmp_path: Path) -> None:
    mission = load_mission(write(tmp_path / "mission.yaml", FULL))
    write(tmp_path / ".harness" / "workflows" / "tdd.yaml", WORKFLOW)
    workflow, warnings = load_workflow(tmp_path, mission)
    assert warnings == []
    prompt = render_prompt(mission, workflow)
    expected_head = (
        "# Mission: Fix the widget\n\nMake the widget spin.\n\n"
        "## Workflow: TDD\n\n### red (tester)\nWrite a failing test.\n### green (coder)\nMake it pass.\n\n"
        "## Related Issues\n- [github] 42 (https://example.invalid/42)\n- [linear] UH-7\n\n"
        "## Read First\n- README.md\n- docs/x.md\n\n"
        "## Expected Artifacts\n- src/widget.py\n\n"
        "## Verification Checks\n- make test\n- lint\n\n"
        f"{MISSION_INSTRUCTION}\n"
    )
    assert prompt == expected_head + runtime_final_message_instruction()
    assert "ac-1" not in prompt and "spins" not in prompt  # acceptance criteria are not rendered
    # the sentinel example in the instruction is a placeholder block; a real answer's block wins
    answer = prompt + "\nwork done\n" + wrap_final_message("All good.")
    assert extract_final_message(answer) == "All good."


def test_empty_sections_omitted() -> None:
    mission = Mission.adhoc("say hi")
    prompt = render_prompt(mission)
    assert prompt.startswith("# Mission: Ad-hoc prompt\n\nsay hi\n\n" + MISSION_INSTRUCTION)
    assert "## Read First" not in prompt and "## Workflow" not in prompt
    assert prompt.endswith(runtime_final_message_instruction())
    assert mission.id == "adhoc"


def test_missing_workflow_is_a_warning(tmp_path: Path) -> None:
    mission = load_mission(write(tmp_path / "mission.yaml", FULL))
    workflow, warnings = load_workflow(tmp_path, mission)
    assert workflow is None
    assert len(warnings) == 1 and "'tdd' not found" in warnings[0]


def test_workflow_profile_optional(tmp_path: Path) -> None:
    mission = load_mission(write(tmp_path / "m.yaml", "schema_version: uh.mission.v0\nid: x\nname: X\n"))
    assert load_workflow(tmp_path, mission) == (None, [])


@pytest.mark.parametrize("doc, needle", [
    ("schema_version: uh.mission.v0\nid: x\ntitel: X\n",
     "'title' or 'name'; unknown key 'titel' (did you mean 'title'?) ignored"),
    ("schema_version: uh.mission.v0\ntitle: X\n", "missing mission id"),
    ("schema_version: uh.mission.v0\nid: ''\ntitle: X\n", "missing mission id"),
    ("schema_version: uh.mission.v0\nid: x\n", "'title' or 'name'"),
    ("schema_version: uh.mission.v1\nid: x\ntitle: X\n", "schema_version"),
    ("schema_version: uh.mission.v0\nid: x\ntitle: X\nruntime_requirements: {needs_gpu: true}\n", "needs_gpu"),
    ("schema_version: uh.mission.v0\nid: x\ntitle: [unclosed\n", "invalid YAML at line"),
    ("- a list\n", "must be a mapping"),
])
def test_bad_missions_one_clear_line(tmp_path: Path, doc: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_mission(write(tmp_path / "mission.yaml", doc))
    message = str(info.value)
    assert needle in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_unknown_top_level_keys_are_dropped_as_uh_does_with_a_warning() -> None:
    from hermes_nb.harness.mission import mission_warnings

    mission = mission_from_document({"schema_version": "uh.mission.v0", "id": "x", "title": "X",
                                     "objectiv": "Y", "owner": "me"})
    assert mission.objective == "" and "objectiv" not in mission.model_dump()
    warnings = mission_warnings(mission)
    assert warnings == ["mission: unknown key 'objectiv' (did you mean 'objective'?) ignored (as UH does)",
                        "mission: unknown key 'owner' ignored (as UH does)"]
    with pytest.raises(ConfigError, match="needs_gpu"):  # the objects UH keeps strict stay strict
        mission_from_document({"schema_version": "uh.mission.v0", "id": "x", "title": "X",
                               "runtime_requirements": {"needs_gpu": True}})


def test_missing_file_and_directory_form(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mission not found"):
        load_mission(tmp_path / "nope.yaml")
    write(tmp_path / "d" / "mission.yaml", "schema_version: uh.mission.v0\nid: d\nname: D\n")
    assert load_mission(tmp_path / "d").id == "d"


def test_adhoc_rejects_empty_prompt() -> None:
    with pytest.raises(ConfigError, match="prompt is empty"):
        Mission.adhoc("   ")


def test_runtime_requirements_warning() -> None:
    from hermes_nb.harness.mission import mission_warnings

    doc = {"schema_version": "uh.mission.v0", "id": "x", "title": "X"}
    assert mission_warnings(mission_from_document(doc)) == []
    warned = mission_from_document({**doc, "runtime_requirements": {"needs_network": True}})
    assert "shell and fs_write" in mission_warnings(warned)[0]
    fine = mission_from_document({**doc, "runtime_requirements": {"needs_shell": False, "needs_fs_write": False}})
    assert mission_warnings(fine) == []
