"""Every face prepares a run the one way (harness.prepare_mission): the same mission sends the same request.

Each face runs against one emulator over loopback; what the emulator received is compared, request by
request: ``hermes-nb run``, ``run_mission()``, the kit (what the e2e notebook's cells call), the e2e notebook
itself executed by papermill, and the console's Run button (ad-hoc prompts). And ``HERMES_NB_MODEL``
reaches the probe's requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_nb import kit, run_mission
from hermes_nb.cli import main
from hermes_nb.core.facts import notebook_path
from hermes_nb.emulator import serve_emulator
from hermes_nb.kit import ConsoleSession

MISSION = """schema_version: uh.mission.v0
id: faces-1
title: Same request from every face
objective: Say which face you were launched from, in one word.
runtime_config_overrides: {model: mission-model-x, temperature: 0.5, max_tokens: 64}
"""
PROMPT = "One word: which face launched me?"
#: the emulator lists the models the tests configure: the e2e notebook holds back a model the proxy does not list
LISTED = ("mission-model-x", "env-model-y")


def _chat_requests(emu: Any) -> list[tuple[str, str, dict[str, str], Any]]:
    """The chat requests the emulator received (method, path, headers, body); then forgets them."""
    seen = [(r.method, r.path, r.headers, r.json) for r in emu.requests if r.path.endswith("/chat/completions")]
    emu.clear()
    return seen


def _cli(emu: Any, args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["run", *args, "--endpoint", emu.endpoint, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _notebook(tmp_path: Path, **parameters: Any) -> None:
    import papermill

    papermill.execute_notebook(str(notebook_path("e2e_smoke")), str(tmp_path / "e2e.ipynb"), parameters=parameters,
                               kernel_name="python3", cwd=str(tmp_path), progress_bar=False, execution_timeout=90)


def test_a_mission_sends_the_same_request_from_every_face(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    mission = tmp_path / "mission.yaml"
    mission.write_text(MISSION)
    for face in ("cli", "lib", "kit", "nb"):
        (tmp_path / face).mkdir()
    with serve_emulator(models=LISTED) as emu:
        cli = _cli(emu, [str(mission), "--root", str(tmp_path / "cli")], capsys)
        from_cli = _chat_requests(emu)

        run_mission(mission, root=tmp_path / "lib", endpoint=emu.endpoint, handle_signals=False)
        from_library = _chat_requests(emu)

        job = kit.open_job("e2e_smoke", mission=str(mission), endpoint=emu.endpoint, root=str(tmp_path / "kit"))
        job.run()
        job.close()
        from_kit = _chat_requests(emu)

        _notebook(tmp_path, mission=str(mission), endpoint=emu.endpoint, root=str(tmp_path / "nb"))
        from_notebook = _chat_requests(emu)

    assert cli["status"] == "passed"
    assert len(from_cli) == 1 and from_cli[0][3]["model"] == "mission-model-x"
    assert from_cli[0][3]["temperature"] == 0.5 and from_cli[0][3]["max_tokens"] == 64
    assert from_library == from_cli
    assert from_kit == from_cli
    assert from_notebook == from_cli


def test_a_prompt_sends_the_same_request_from_every_face(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_MODEL", "env-model-y")  # a layer every face reads
    for face in ("cli", "lib", "console"):
        (tmp_path / face).mkdir()
    with serve_emulator(models=LISTED) as emu:
        _cli(emu, ["--prompt", PROMPT, "--root", str(tmp_path / "cli")], capsys)
        from_cli = _chat_requests(emu)

        run_mission(prompt=PROMPT, root=tmp_path / "lib", endpoint=emu.endpoint, handle_signals=False)
        from_library = _chat_requests(emu)

        actions = ConsoleSession()
        try:
            html = actions.run_prompt(emu.endpoint, "", "ok", PROMPT, root=str(tmp_path / "console"))
        finally:
            actions.close()
        from_console = _chat_requests(emu)

        _notebook(tmp_path, prompt=PROMPT, endpoint=emu.endpoint)
        from_notebook = _chat_requests(emu)

    assert "passed" in html
    assert len(from_cli) == 1 and from_cli[0][3]["model"] == "env-model-y"
    assert from_library == from_cli
    assert from_console == from_cli
    assert from_notebook == from_cli


def test_hermes_nb_model_reaches_the_probe(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_MODEL", "env-model-probe")
    with serve_emulator() as emu:
        main(["probe", "--endpoint", emu.endpoint, "--budget-s", "20", "--json"])
        bodies = [r.json for r in emu.requests if isinstance(r.json, dict) and "model" in r.json]
    capsys.readouterr()
    assert bodies and {body["model"] for body in bodies} == {"env-model-probe"}


def test_the_mission_layer_sits_under_the_environment_and_the_flags(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.harness.prepare import prepare_mission

    mission = tmp_path / "mission.yaml"
    mission.write_text(MISSION)
    prepared = prepare_mission(mission, root=tmp_path, environ={})
    assert prepared.config.model == "mission-model-x" and prepared.config.origin("model") == "mission"
    monkeypatch.setenv("HERMES_NB_MODEL", "env-model")
    assert prepare_mission(mission, root=tmp_path).config.model == "env-model"
    assert prepare_mission(mission, root=tmp_path, model="flag-model").config.model == "flag-model"
