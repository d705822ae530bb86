"""The proxy-version matrix: per-version cached venvs, which versions support which rig state, the summary.

Installing hermes-agent releases takes minutes, so `make test` uses the already-built .venv-hermes as
the cache entry for 0.19.0 and a fake per-version runner for the matrix logic. Opt in to a real install
with HERMES_NB_TEST_INSTALL_VERSIONS=0.18.2[,…] (cache: .cache/hermes-nb under the repository).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hermes_nb import RigError, verify_receipts
from hermes_nb.cli import main
from hermes_nb.nbrun.ci_report import ci_report
from hermes_nb.nbrun.matrix import matrix_markdown, run_matrix
from hermes_nb.proxy.executable import find_hermes_bin
from hermes_nb.proxy.venvs import cache_dir, ensure_hermes, pins_for, support_table, unsupported_reason, venv_dir
from tests.helpers import ROOT, run_smoke_on

HERMES_BIN = find_hermes_bin()  # read at collection, before the autouse fixture clears HERMES_*
VERSIONS = ["0.19.0", "0.16.0", "0.18.1", "0.17.0", "0.18.0"]  # given unsorted on purpose
BIG_BODY = "routes[POST /v1/chat/completions (1.5 MB body)].status: 200 → 413"


def _report(version: str, verdict: str, drift: list[str]) -> dict:
    return {"verdict": verdict, "exit_code": 0 if verdict == "passed" else 1, "run_id": f"run-{version}",
            "hermes_version": version, "duration_s": 1.0, "notebooks": [
                {"name": "wire_format_spike", "verdict": verdict, "drift": drift},
                {"name": "adapter_check", "verdict": "passed", "drift": []}]}


def test_live_support_follows_the_observed_contracts() -> None:
    table = support_table()
    assert {v for v, s in table.items() if s["live"]} == {"0.18.0", "0.18.1", "0.18.2", "0.19.0"}
    assert all(s["stale"] and s["logged-out"] for s in table.values())
    assert "NOUS_INFERENCE_BASE_URL" in unsupported_reason("0.16.0", "live")
    assert unsupported_reason("0.16.0", "stale") is None and unsupported_reason("0.19.0", "live") is None
    assert unsupported_reason("0.99.0", "live") is None  # unknown release: the rig checks the installed source


def test_matrix_with_a_fake_runner_names_what_drifted_between_versions(tmp_path: Path) -> None:
    calls = []

    def fake(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        calls.append((version, state, out_dir))
        failing = version == "0.18.0"
        return _report(version, "failed" if failing else "passed", [BIG_BODY] if failing else [])

    result = run_matrix(VERSIONS, state="live", out_dir=tmp_path, runner=fake)
    assert [c[0] for c in calls] == ["0.18.0", "0.18.1", "0.19.0"]  # oldest first; 0.16/0.17 never installed
    assert all(c[2] == tmp_path / c[0] for c in calls)  # one receipts run per version
    doc = json.loads((tmp_path / "matrix.json").read_text())
    assert [(v["version"], v["status"]) for v in doc["versions"]] == [
        ("0.16.0", "unsupported"), ("0.17.0", "unsupported"), ("0.18.0", "ran"), ("0.18.1", "ran"), ("0.19.0", "ran")]
    assert doc["verdict"] == "failed" and result.exit_code == 1
    first, second = doc["changes"]
    assert (first["from"], first["to"]) == ("0.18.0", "0.18.1")
    assert first["verdicts"] == {"wire_format_spike": ["failed", "passed"]} and first["drift_removed"] == [BIG_BODY]
    assert second == {"from": "0.18.1", "to": "0.19.0", "provider": "nous", "verdicts": {}, "drift_added": [],
                      "drift_removed": []}
    md = (tmp_path / "matrix.md").read_text()
    assert md == matrix_markdown(doc)
    assert "**0.18.0 → 0.18.1**" in md and f"drift gone: {BIG_BODY}" in md and "**0.18.1 → 0.19.0**: none" in md
    assert "| 0.16.0 | nous | yes | no | yes |" in md and "NOUS_INFERENCE_BASE_URL" in md


def test_a_version_that_cannot_be_had_is_unavailable_and_blocks(tmp_path: Path) -> None:
    def fake(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        if version == "0.18.2":
            raise RigError("installing hermes-agent 0.18.2 failed: no network")
        return _report(version, "passed", [])

    result = run_matrix(["0.18.2", "0.19.0"], state="stale", out_dir=tmp_path, runner=fake)
    doc = result.to_dict()
    assert [v["status"] for v in doc["versions"]] == ["unavailable", "ran"]
    assert result.verdict == "blocked" and result.exit_code == 3 and doc["changes"] == []
    assert "no network" in (tmp_path / "matrix.md").read_text()


def test_matrix_runner_writes_one_verifiable_receipts_run_per_version(tmp_path: Path) -> None:
    """A per-version runner that smokes the emulator: the matrix's receipts layout, for real."""
    def emulator_runner(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        result = run_smoke_on(out_dir, only=["adapter_check"], html=False)
        return ci_report(result)

    result = run_matrix(["0.18.2", "0.19.0"], state="live", out_dir=tmp_path, runner=emulator_runner)
    assert result.verdict == "passed"
    for version in ("0.18.2", "0.19.0"):
        assert verify_receipts(tmp_path / version).ok
    doc = json.loads((tmp_path / "matrix.json").read_text())
    assert [v["notebooks"] for v in doc["versions"]] == [{"adapter_check": "passed"}] * 2
    whole = verify_receipts(tmp_path)  # the matrix directory itself: its versions' receipts, and matrix.json/.md
    assert whole.ok, whole.problems
    assert [r["path"].split("/")[0] for r in whole.receipts] == ["0.18.2", "0.19.0"]


def test_cache_dir_is_ours_or_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert cache_dir({"HERMES_NB_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert cache_dir({}).name == "hermes-nb"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir({}) == tmp_path / "xdg" / "hermes-nb"
    assert venv_dir("0.18.2", {"HERMES_NB_CACHE_DIR": str(tmp_path)}) == tmp_path / "hermes-agent" / "0.18.2"


def test_the_shipped_019_pins_are_the_repository_lock() -> None:
    assert pins_for("0.19.0").read_bytes() == (ROOT / "requirements-hermes.lock").read_bytes()
    assert pins_for("0.18.2") == ["hermes-agent==0.18.2", "aiohttp"]


def _fake_pip(version_made: str, fail: bool = False):
    """Stands in for `python -m venv` + `pip install`: lays out a venv whose metadata says version_made."""
    commands = []

    def run(cmd, **kwargs):
        commands.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            venv = Path(cmd[3])
            (venv / "bin").mkdir(parents=True)
            (venv / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
            return subprocess.CompletedProcess(cmd, 0, "", "")
        if fail:
            return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for hermes-agent")
        venv = Path(cmd[0]).parent.parent
        dist = venv / "lib" / "python3.11" / "site-packages" / f"hermes_agent-{version_made}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: hermes-agent\nVersion: {version_made}\n")
        hermes = venv / "bin" / "hermes"
        hermes.write_text("#!/bin/sh\nexit 0\n")
        hermes.chmod(0o755)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run, commands


def test_ensure_hermes_installs_from_pins_once_and_cleans_up_a_failed_install(tmp_path: Path) -> None:
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "PATH": "/nonexistent"}
    run, commands = _fake_pip("0.18.2")
    binary = ensure_hermes("0.18.2", environ=env, run=run)
    assert binary == tmp_path / "hermes-agent" / "0.18.2" / "bin" / "hermes"
    assert commands[1][-2:] == ["hermes-agent==0.18.2", "aiohttp"]
    assert ensure_hermes("0.18.2", environ=env, run=run) == binary and len(commands) == 2  # cached: no rebuild
    run19, commands19 = _fake_pip("0.19.0")
    ensure_hermes("0.19.0", environ=env, run=run19, adopt=False)  # not the .venv-hermes
    assert commands19[1][-2:] == ["-r", str(pins_for("0.19.0"))]
    bad, _ = _fake_pip("0.18.1", fail=True)
    with pytest.raises(RigError, match="No matching distribution"):
        ensure_hermes("0.18.1", environ=env, run=bad)
    assert not (tmp_path / "hermes-agent" / "0.18.1").exists()
    with pytest.raises(RigError, match="not in the cache"):
        ensure_hermes("0.18.0", environ=env, install=False)


@pytest.mark.skipif(HERMES_BIN is None, reason="no hermes: run `make rig-venv`")
def test_the_existing_venv_hermes_is_adopted_as_the_019_cache(tmp_path: Path) -> None:
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_NB_HERMES_BIN": str(HERMES_BIN), "PATH": "/nonexistent"}
    binary = ensure_hermes("0.19.0", environ=env, install=False)
    entry = tmp_path / "hermes-agent" / "0.19.0"
    assert entry.is_symlink() and entry.resolve() == HERMES_BIN.resolve().parent.parent
    assert binary == entry / "bin" / "hermes"
    environ = {"HERMES_NB_CACHE_DIR": str(tmp_path), "PATH": "/x"}
    assert ensure_hermes("0.19.0", environ=environ, install=False) == binary


def test_smoke_hermes_version_usage_and_unsupported_live(capsys) -> None:
    assert main(["smoke", "--hermes-version", "0.19.0", "--json"]) == 2
    assert "go together" in json.loads(capsys.readouterr().out)["error"]  # worded for any caller, not as a flag
    assert main(["smoke", "--rig", "live", "--hermes-version", "0.17.0", "--json"]) == 3
    assert "NOUS_INFERENCE_BASE_URL" in json.loads(capsys.readouterr().out)["error"]
    assert main(["matrix", "--versions", "0.19.0,nope", "--json"]) == 2


@pytest.mark.real_proxy
@pytest.mark.skipif(HERMES_BIN is None, reason="no hermes: run `make rig-venv`")
def test_cli_matrix_live_against_the_real_019_proxy(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))
    code = main(["matrix", "--versions", "0.16.0,0.19.0", "--state", "live", "--no-install", "--only", "adapter_check",
                 "--only", "wire_format_spike", "--no-html", "--out", str(tmp_path / "m"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert [(v["version"], v["status"], v["verdict"]) for v in doc["versions"]] == [
        ("0.16.0", "unsupported", None), ("0.19.0", "ran", "passed")]
    assert doc["versions"][1]["hermes_version"] == "0.19.0"
    assert verify_receipts(tmp_path / "m" / "0.19.0").ok
    assert (tmp_path / "m" / "matrix.md").is_file()


OPT_IN = [v for v in os.environ.get("HERMES_NB_TEST_INSTALL_VERSIONS", "").split(",") if v]


@pytest.mark.real_proxy
@pytest.mark.skipif(not OPT_IN, reason="opt-in: HERMES_NB_TEST_INSTALL_VERSIONS=0.18.2[,…] installs real releases")
def test_opt_in_install_real_releases_and_run_the_matrix(capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(ROOT / ".cache" / "hermes-nb"))
    out = ROOT / ".cache" / "matrix-out"
    code = main(["matrix", "--versions", ",".join(OPT_IN), "--state", "stale", "--no-html", "--out", str(out),
                 "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert all(v["status"] == "ran" for v in doc["versions"]), doc
    assert code in (0, 3)  # stale: the adapter check and the e2e run are blocked by design


@pytest.mark.real_proxy
@pytest.mark.skipif(HERMES_BIN is None, reason="no hermes: run `make rig-venv`")
def test_cli_smoke_rig_live_hermes_version_uses_the_cached_venv(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))  # adopted as the 0.19.0 cache entry
    code = main(["smoke", "--rig", "live", "--hermes-version", "0.19.0", "--only", "adapter_check", "--no-html",
                 "--out", str(tmp_path / "r"), "--junit-xml", str(tmp_path / "j.xml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["target_kind"] == "rig", out
    assert (tmp_path / "cache" / "hermes-agent" / "0.19.0").is_symlink()
    assert 'name="hermes_version" value="0.19.0"' in (tmp_path / "j.xml").read_text()


def test_matrix_outputs_never_carry_a_secret(tmp_path: Path) -> None:
    from hermes_nb.core.redaction import Redactor

    canary = "sk-canary-matrix-0123456789abcdef"

    def leaky(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        return _report(version, "failed", [f"routes[GET /].body_excerpt: ok → {canary}"])

    run_matrix(["0.18.2", "0.19.0"], state="live", out_dir=tmp_path, runner=leaky, redactor=Redactor([canary]))
    for name in ("matrix.json", "matrix.md"):
        text = (tmp_path / name).read_text()
        assert canary not in text and "<redacted>" in text


def test_matrix_runs_every_provider_into_its_own_directory(tmp_path: Path, capsys) -> None:
    """``matrix --providers nous,xai``: xai runs live on every release (its credential's base_url is honoured)."""
    calls = []

    def fake(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        calls.append((version, provider, out_dir.name))
        return _report(version, "passed", [])

    result = run_matrix(["0.16.0", "0.19.0"], state="live", out_dir=tmp_path, runner=fake, providers=["nous", "xai"])
    assert calls == [("0.19.0", "nous", "0.19.0"), ("0.16.0", "xai", "0.16.0-xai"), ("0.19.0", "xai", "0.19.0-xai")]
    doc = result.to_dict()
    assert [(v["version"], v["provider"], v["status"]) for v in doc["versions"]] == [
        ("0.16.0", "nous", "unsupported"), ("0.19.0", "nous", "ran"),
        ("0.16.0", "xai", "ran"), ("0.19.0", "xai", "ran")]
    assert [(c["from"], c["to"], c["provider"]) for c in doc["changes"]] == [("0.16.0", "0.19.0", "xai")]
    md = (tmp_path / "matrix.md").read_text()
    assert "| 0.16.0 | xai | yes | yes | yes |" in md and "| 0.16.0 | nous | yes | no | yes |" in md
    assert main(["matrix", "--providers", "nous,claude", "--versions", "0.19.0", "--out", str(tmp_path)]) == 2
    assert "--providers: must be 'nous' or 'xai'" in capsys.readouterr().err


def test_a_signal_stops_the_matrix_with_its_outputs_written(tmp_path: Path) -> None:
    """SIGTERM while the second version's rig starts (the runner raises Cancelled): the first version's report is
    kept, the second and third are recorded cancelled, matrix.json/.md and the JUnit (one suite per version)
    say so, and the exit code is 143."""
    import signal

    from junitparser import Error, JUnitXml

    from hermes_nb.harness.signals import Cancelled
    from hermes_nb.nbrun.matrix import matrix

    def runner(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        if version == "0.18.2":
            raise Cancelled(signal.SIGTERM)
        return _report(version, "passed", [])

    result, doc = matrix(["0.18.1", "0.18.2", "0.19.0"], state="stale", out=tmp_path / "m", runner=runner,
                         junit_xml=tmp_path / "m.xml", summary_md=tmp_path / "m.md", environ={}, handle_signals=False)
    assert (result.verdict, result.exit_code, doc["exit_code"]) == ("cancelled", 143, 143)
    assert [(v["version"], v["status"]) for v in doc["versions"]] == [
        ("0.18.1", "ran"), ("0.18.2", "cancelled"), ("0.19.0", "cancelled")]
    assert json.loads((tmp_path / "m" / "matrix.json").read_text())["cancelled_by"] == "SIGTERM"
    suites = {s.name: s for s in JUnitXml.fromfile(str(tmp_path / "m.xml"))}
    assert len(suites) == 3
    cancelled = suites["hermes-nb matrix stale hermes-agent 0.18.2"]
    [case] = list(cancelled)
    assert isinstance(case.result[0], Error) and case.result[0].type == "cancelled"
    assert ": cancelled (exit 143)" in (tmp_path / "m.md").read_text()


def test_matrix_blocked_exit_maps_a_stale_matrix(tmp_path: Path) -> None:
    """--state stale is blocked by design: --blocked-exit 0 keeps CI green, as for the smoke."""
    from hermes_nb.nbrun.matrix import matrix

    def runner(version: str, state: str, out_dir: Path, provider: str = "nous") -> dict:
        return {**_report(version, "blocked", []), "exit_code": 3}

    result, doc = matrix(["0.19.0"], state="stale", out=tmp_path, runner=runner, blocked_exit=0, environ={},
                         handle_signals=False)
    assert (result.verdict, result.exit_code, doc["blocked_exit"]) == ("blocked", 0, 0)
    result, _ = matrix(["0.19.0"], state="stale", out=tmp_path, runner=runner, environ={}, handle_signals=False)
    assert result.exit_code == 3
