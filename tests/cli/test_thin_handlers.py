"""Thin CLI handlers: ``hermes-nb smoke`` and ``matrix`` turn flags into one library
call each (:func:`hermes_nb.smoke`, :func:`hermes_nb.rig.matrix.matrix`) and print what it returns, so a
notebook or a script gets the same run: target choice, venvs, storage staging and CI outputs live in the library.
As papermill's tests check its CLI: the library call is replaced and its arguments are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import hermes_nb
from hermes_nb import SmokeOutcome
from hermes_nb.cli import main
from hermes_nb.cli.commands import smoke as smoke_cmd
from hermes_nb.nbrun.jobs import SmokeSpec


def test_the_smoke_command_is_one_library_call(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    seen: list[tuple[SmokeSpec, dict[str, Any]]] = []
    report = {"verdict": "blocked", "exit_code": 0, "blocked_exit": 0, "target_kind": "rig", "ci_run_url": None}

    def fake(spec: SmokeSpec, **kwargs: Any) -> SmokeOutcome:
        seen.append((spec, kwargs))
        return SmokeOutcome(report, None, {"junit_xml": "j.xml"}, ["a warning"], "the rig did not start")

    monkeypatch.setattr(smoke_cmd, "smoke", fake)
    code = main(["smoke", "--rig", "stale", "--hermes-version", "0.19.0", "--out", str(tmp_path), "--only",
                 "adapter_check", "--cell-timeout-s", "9", "--no-html", "--junit-xml", "j.xml", "--summary-md", "s.md",
                 "--blocked-exit", "0", "--json"])
    assert code == 0
    [(spec, kwargs)] = seen
    assert spec == SmokeSpec(rig="stale", hermes_version="0.19.0", out=str(tmp_path), only=["adapter_check"],
                             cell_timeout_s=9.0, html=False, junit_xml="j.xml", summary_md="s.md", blocked_exit=0)
    assert kwargs == {"progress": None}
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"error": "the rig did not start", "verdict": "blocked", "target_kind": "rig", "exit_code": 0,
                   "blocked_exit": 0, "ci_run_url": None, "warnings": ["a warning"], "problems": [],
                   "junit_xml": "j.xml"}


def test_the_matrix_command_is_one_library_call(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from hermes_nb.cli.commands import matrix as matrix_cmd

    seen: list[Any] = []

    class Result:
        verdict, exit_code, out_dir = "blocked", 0, Path("m")

    def fake(spec: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        seen.append(spec)
        return Result(), {"versions": [], "changes": [], "warnings": [], "problems": [], "exit_code": 0,
                          "verdict": "blocked"}

    monkeypatch.setattr(matrix_cmd, "matrix", fake)
    assert main(["matrix", "--versions", "0.18.2,0.19.0", "--state", "stale", "--junit-xml", "m.xml",
                 "--summary-md", "m.md", "--no-install", "--json"]) == 0
    [spec] = seen
    assert spec.versions == ["0.18.2", "0.19.0"] and spec.state == "stale" and spec.install is False
    assert (spec.junit_xml, spec.summary_md) == ("m.xml", "m.md")
    assert json.loads(capsys.readouterr().out)["verdict"] == "blocked"


def test_matrix_help_shows_the_ci_flags(capsys) -> None:
    assert main(["matrix", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--junit-xml" in text and "--summary-md" in text and "--blocked-exit" in text


def test_the_cli_and_the_library_share_one_declaration_of_each_default(capsys) -> None:
    """The flag's default in --help is the spec's, and the library call without it gets the same value."""
    assert main(["smoke", "--help"]) == 0
    default = SmokeSpec.model_fields["cell_timeout_s"].default
    assert f"(default: {default:g})" in " ".join(capsys.readouterr().out.split())
    assert SmokeSpec.build().cell_timeout_s == SmokeSpec.model_fields["cell_timeout_s"].default


def test_a_script_gets_the_same_smoke(tmp_path: Path) -> None:
    """``hermes_nb.smoke`` with the CLI's outputs, no CLI: receipts, JUnit, summary and the exit code."""
    outcome = hermes_nb.smoke(only=["adapter_check"], out=tmp_path / "r", html=False, junit_xml=tmp_path / "j.xml",
                              summary_md=tmp_path / "s.md", environ={}, handle_signals=False)
    assert (outcome.verdict, outcome.exit_code) == ("passed", 0)
    assert outcome.written == {"junit_xml": str(tmp_path / "j.xml"), "summary_md": str(tmp_path / "s.md")}
    assert (tmp_path / "r" / "index.json").is_file() and "passed (exit 0)" in (tmp_path / "s.md").read_text()
    assert outcome.to_dict()["receipts"][0]["verdict"] == "passed"


def test_library_errors_are_not_worded_as_flags(tmp_path: Path) -> None:
    from hermes_nb import UsageError

    with pytest.raises(UsageError) as info:
        hermes_nb.smoke(hermes_version="0.19.0", environ={}, handle_signals=False)
    assert "--" not in str(info.value)
    with pytest.raises(UsageError) as info:
        hermes_nb.smoke(cell_timeout_s=0, environ={}, handle_signals=False)
    assert "--" not in str(info.value)
