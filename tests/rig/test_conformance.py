"""Conformance: the emulator's ``hermes-agent`` profile against the REAL ``hermes proxy`` (via the rig).

Each rig state starts once per session (tests/conftest.py: ``shared_rig``).
Skipped with a visible reason only when no ``hermes`` can be had (``make rig-venv``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig, WireReport
from hermes_nb.cli import main
from hermes_nb.emulator import serve_emulator
from hermes_nb.proxy.contracts import (
    compare,
    contract_document,
    contract_section,
    load_contract,
    release_contract,
    resolve_contract,
)
from hermes_nb.proxy.probe import probe
from hermes_nb.rig.rig import RigHandle
from hermes_nb.wire.reading import classify

pytestmark = pytest.mark.real_proxy
EMULATOR_SCENARIO = {"stale": "auth-stale", "live": "ok"}
MODEL = "nousresearch/hermes-4-405b"
#: (scenario, stream) -> (status, reason); a truncated JSON body is a cut-off document, not a cut-off stream
EXPECTED_FAILURE = {
    ("rate-limited", True): ("blocked", "rate_limited"), ("rate-limited", False): ("blocked", "rate_limited"),
    ("server-error", True): ("failed", "http_error"), ("server-error", False): ("failed", "http_error"),
    ("truncated", True): ("failed", "truncated"), ("truncated", False): ("failed", "protocol_error"),
}


@pytest.fixture
def stale_rig(shared_rig) -> RigHandle:
    return shared_rig("0.19", "stale")


@pytest.fixture
def live_rig(shared_rig) -> RigHandle:
    return shared_rig("0.19", "live")


@pytest.fixture(scope="module")
def real_reports(shared_rig) -> dict[str, WireReport]:
    return {state: probe(shared_rig("0.19", state).endpoint) for state in ("stale", "live")}


@pytest.fixture(scope="module")
def emulator_reports() -> dict[str, WireReport]:
    out = {}
    for state, scenario in EMULATOR_SCENARIO.items():
        with serve_emulator(profile="hermes-agent", scenario=scenario) as emu:
            out[state] = probe(emu.endpoint)
    return out


def _compared(report: WireReport) -> dict[str, Any]:
    section = contract_section(report)
    section.pop("server_observed")  # recorded, not a contract field
    return section


# --------------------------------------------------------------------------- wire contract


@pytest.mark.parametrize("state", ["stale", "live"])
def test_real_proxy_equals_emulator_on_every_contract_field(state: str, real_reports: dict,
                                                            emulator_reports: dict) -> None:
    real, emu = real_reports[state], emulator_reports[state]
    assert real.state == emu.state == state
    assert _compared(real) == _compared(emu)
    # and through the drift machinery, both ways
    assert compare(real, contract_document({state: emu}, target="emulator")) == []
    assert compare(emu, contract_document({state: real}, target="real")) == []


def test_real_proxy_differs_from_the_seed_where_the_seed_is_wrong(real_reports: dict) -> None:
    seed = load_contract(resolve_contract("seed"))
    for state in ("stale", "live"):
        fields = {d.field: d for d in compare(real_reports[state], seed)}
        assert fields["bearer_required"].observed is False, state
        assert fields["routes[GET /].body_kind"].observed == "text", state
        assert fields["routes[GET /].content_type"].observed == "text/plain", state
        assert fields["routes[GET /health].status"].observed == 200, state
        # where the seed is right, no drift
        assert not any(f.startswith(("routes[POST /v1/chat/completions]", "stream_failure_shape")) for f in fields)


def test_committed_contract_is_what_the_real_proxy_does(real_reports: dict, shared_rig) -> None:
    install = shared_rig("0.19", "live").install
    name = release_contract(str(install.package), str(install.version))
    assert name == "hermes-agent-0.19.0"
    contract = load_contract(resolve_contract(name))
    for state, report in real_reports.items():
        assert compare(report, contract, state=state) == [], state
        assert "hermes-agent 0.19.0" in report.matches


# --------------------------------------------------------------------------- check and run


def test_check_is_locked_on_stale_and_ready_on_live(stale_rig: RigHandle, live_rig: RigHandle,
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--endpoint", stale_rig.endpoint, "--model", MODEL, "--json"]) == 3
    locked = json.loads(capsys.readouterr().out)
    assert locked["state"] == "locked" and locked["available"] is False
    assert main(["check", "--endpoint", live_rig.endpoint, "--model", MODEL, "--json"]) == 0
    ready = json.loads(capsys.readouterr().out)
    assert ready["state"] == "ready" and ready["available"] is True and ready["models"]


def test_run_passes_through_live_and_is_blocked_on_stale(stale_rig: RigHandle, live_rig: RigHandle,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--prompt", "Say hello.", "--endpoint", live_rig.endpoint, "--model", MODEL, "--json"])
    passed = json.loads(capsys.readouterr().out)
    assert code == 0 and passed["status"] == "passed" and passed["reason"] == "ok"
    final = (Path(passed["run_dir"]) / "runtime-final.txt").read_text("utf-8")
    assert final.strip() and "uh-runtime-final-message" not in final  # the sentinel's content, extracted
    code = main(["run", "--prompt", "Say hello.", "--endpoint", stale_rig.endpoint, "--model", MODEL, "--json"])
    blocked = json.loads(capsys.readouterr().out)
    assert code == 3 and blocked["status"] == "blocked"
    assert any("hermes auth" in e for e in blocked["errors"] + [blocked.get("hint") or ""])


# --------------------------------------------------------------------------- failure scenarios


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("scenario", ["rate-limited", "server-error", "truncated"])
def test_failures_classify_the_same_through_the_real_proxy(scenario: str, stream: bool,
                                                           live_rig: RigHandle) -> None:
    def outcome(endpoint: str) -> tuple:
        config = HermesProxyRuntimeConfig(endpoint=endpoint, model=MODEL, stream=stream, max_tokens=64,
                                          extra_headers={"X-Hermes-Emulator-Scenario": scenario})
        with HermesClient(config) as client:
            ex = client.chat([{"role": "user", "content": "hi"}])
        got = classify(ex, config)
        return got.status, got.reason, got.http_status, got.error_type, got.retry_after_s, ex.text

    with serve_emulator(profile="hermes-agent") as emu:
        direct = outcome(emu.endpoint)
    through = outcome(live_rig.endpoint)
    assert through == direct
    assert direct[:2] == EXPECTED_FAILURE[(scenario, stream)]
