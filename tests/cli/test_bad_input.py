"""Bad input is one line: exit 2, exactly one JSON object under --json, no traceback, nothing written.

Non-UTF-8 manifests, missions and prompt files (the file and the byte offset named), headers the client frames
itself or the bearer's own key in ``extra_headers``, output paths that cannot be written (checked before any
notebook runs), and an unwritable ``GITHUB_STEP_SUMMARY`` (a warning, once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_nb import ConfigError
from hermes_nb.cli import main
from hermes_nb.core.config import validate_config
from tests.helpers import ROOT


def _cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """The CLI as a program (a traceback would show on stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_", "GITHUB_"))}
    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line_exit_2(code: int, out: str, err: str, *needles: str) -> dict:
    assert code == 2, err[-2000:]
    assert "Traceback" not in err
    doc = json.loads(out)  # exactly one object
    # `check` reports a bad config as its own result (state misconfigured, exit 2); every other command as an error
    message = doc["error"] if "error" in doc else doc["errors"][0]
    assert doc.get("exit_code", doc.get("state")) in (2, "misconfigured") and len(err.strip().splitlines()) <= 1, err
    for needle in needles:
        assert needle in message, message
    return doc


@pytest.fixture
def latin1_root(tmp_path: Path) -> Path:
    assert main(["adapter", "add", "--root", str(tmp_path)]) == 0
    manifest = tmp_path / ".harness" / "adapters" / "hermes-proxy.yaml"
    text = manifest.read_bytes()
    assert b"name: Hermes proxy" in text
    manifest.write_bytes(text.replace(b"name: Hermes proxy", "name: Hermes café".encode("latin-1"), 1))
    return tmp_path


@pytest.mark.parametrize("command", [
    ["check"], ["run", "--prompt", "hi", "--dry-run"], ["adapter", "show"],
])
def test_a_manifest_that_is_not_utf8_is_one_line_naming_the_file_and_byte(latin1_root: Path,
                                                                            command: list[str]) -> None:
    """Picked up from the project root, as `check`, `run` and `adapter show` do."""
    code, out, err = _cli(*command, "--root", str(latin1_root), "--json", cwd=latin1_root)
    manifest = latin1_root / ".harness" / "adapters" / "hermes-proxy.yaml"
    offset = manifest.read_bytes().index(b"\xe9")
    _one_line_exit_2(code, out, err, str(manifest), "not UTF-8", f"byte {offset}: 0xe9")
    assert not (latin1_root / ".harness" / "missions").exists()  # nothing written


def test_promote_with_a_manifest_that_is_not_utf8(latin1_root: Path, tmp_path: Path) -> None:
    manifest = latin1_root / ".harness" / "adapters" / "hermes-proxy.yaml"
    receipt = tmp_path / "r.ipynb"
    receipt.write_text("{}")
    code, out, err = _cli("promote", "--receipt", str(receipt), "--manifest", str(manifest), "--json")
    _one_line_exit_2(code, out, err, str(manifest), "not UTF-8")


def test_a_mission_and_a_prompt_file_that_are_not_utf8(tmp_path: Path) -> None:
    mission = tmp_path / "mission.yaml"
    mission.write_bytes(b"schema_version: uh.mission.v0\nid: m\ntitle: t\nobjective: " + "café".encode("latin-1"))
    code, out, err = _cli("run", str(mission), "--root", str(tmp_path), "--json")
    offset = mission.read_bytes().index(b"\xe9")
    _one_line_exit_2(code, out, err, str(mission), f"byte {offset}: 0xe9")
    prompt = tmp_path / "prompt.txt"
    prompt.write_bytes(b"fine so far \xff")
    code, out, err = _cli("run", "--prompt-file", str(prompt), "--root", str(tmp_path), "--json")
    _one_line_exit_2(code, out, err, str(prompt), "byte 12: 0xff")
    assert not (tmp_path / ".harness").exists()


@pytest.mark.parametrize("header", ["Content-Length", "host", "Transfer-Encoding", "Authorization"])
def test_headers_the_client_frames_or_the_bearers_own_key_are_rejected_by_the_schema(header: str) -> None:
    with pytest.raises(ConfigError, match=f"header '{header}' cannot be set in extra_headers"):
        validate_config({"model": "m", "extra_headers": {header: "1"}})
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "docs" / "schema"
                         / "hermes-proxy-runtime-config.schema.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors({"model": "m", "extra_headers": {header: "1"}}))
    assert not list(Draft202012Validator(schema).iter_errors({"model": "m", "extra_headers": {"x-trace": "1"}}))


def test_a_content_length_header_is_exit_2_not_a_crash(tmp_path: Path) -> None:
    overrides = json.dumps({"extra_headers": {"Content-Length": "5"}})
    code, out, err = _cli("run", "--prompt", "hi", "--endpoint", "http://127.0.0.1:9/v1", "--root", str(tmp_path),
                          "--runtime-config-overrides", overrides, "--json")
    _one_line_exit_2(code, out, err, "Content-Length")
    assert not (tmp_path / ".harness").exists()
    code, out, err = _cli("check", "--endpoint", "http://127.0.0.1:9/v1", "--root", str(tmp_path),
                          "--runtime-config-overrides", overrides, "--json")
    doc = json.loads(out)  # check reports a bad config as its own result: misconfigured, exit 2
    assert (code, doc["state"]) == (2, "misconfigured") and "Traceback" not in err
    assert "'Content-Length' cannot be set in extra_headers" in doc["errors"][0]


@pytest.mark.parametrize("flag", ["--junit-xml", "--summary-md"])
def test_an_unwritable_ci_output_is_exit_2_before_any_notebook_runs(tmp_path: Path, flag: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out_dir = tmp_path / "receipts"
    code, out, err = _cli("smoke", "--only", "adapter_check", "--out", str(out_dir), flag,
                          str(blocker / "report.out"), "--json")
    _one_line_exit_2(code, out, err, str(blocker / "report.out"), "not writable")
    assert not out_dir.exists()  # checked before anything ran or was written
    code, out, err = _cli("matrix", "--versions", "0.19.0", "--out", str(out_dir), flag, str(tmp_path), "--json")
    _one_line_exit_2(code, out, err, "is a directory")


def test_an_unwritable_github_step_summary_is_warned_about_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(blocker / "summary.md"))
    code = main(["smoke", "--only", "adapter_check", "--no-html", "--out", str(tmp_path / "r"), "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 0 and doc["verdict"] == "passed"
    assert [w for w in doc["warnings"] if "GITHUB_STEP_SUMMARY" in w] == [
        f"GITHUB_STEP_SUMMARY {blocker / 'summary.md'}: not writable ({blocker} is not a directory); "
        "the summary is not appended there"]
    assert captured.err.count("GITHUB_STEP_SUMMARY") == 1 and "step_summary" not in doc
    code = main(["smoke", "--only", "adapter_check", "--no-html", "--out", str(tmp_path / "r")])  # human mode too
    assert code == 0 and capsys.readouterr().err.count("GITHUB_STEP_SUMMARY") == 1
