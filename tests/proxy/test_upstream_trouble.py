"""Upstream trouble is not proxy drift.

Only proxy-owned facts judge the spike. A slow upstream (a late first byte, a long answer; scaled down here: the
emulator's delays and the probe's per-request budget are options) is never drift; an upstream the proxy reports dead
(its own 502/504) is the e2e run's ``failed`` with a hint naming the upstream, and no drift; a 429 anywhere
(``/models`` in the adapter check included) is ``blocked`` with its Retry-After and honours ``--blocked-exit``; an
unreachable proxy is one line and one operator action, no per-field drift. Against the emulator here, against the
real proxy in :func:`test_dead_upstream_behind_the_real_proxy` (marked ``real_proxy``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_nb import HermesProxyRuntimeConfig, check
from hermes_nb.cli import main
from hermes_nb.emulator import serve_emulator
from hermes_nb.proxy.contracts import compare, judge, load_contract, resolve_contract
from hermes_nb.proxy.probe import probe
from tests.helpers import ROOT

HERMES_BIN = ROOT / ".venv-hermes" / "bin" / "hermes"
needs_hermes = pytest.mark.skipif(not HERMES_BIN.is_file(), reason="no .venv-hermes: run `make rig-venv`")
UNREACHABLE = "http://127.0.0.1:1/v1"
#: the probe's per-request budget here, and the emulator's delays beyond it (the defaults: 5 s, 6 s and 25 s)
BUDGET_S, FIRST_BYTE_S, ANSWER_S = 0.4, 0.8, 3.0


def _judged(endpoint: str, **budget: float) -> tuple[Any, list[Any], list[Any]]:
    report = probe(endpoint, budget_s=30, **budget)
    contract = load_contract(resolve_contract("hermes-agent-0.19.0", provider=report.provider))
    return report, list(compare(report, contract)), judge(report, contract)[1]


def _smoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["smoke", "--no-html", "--json", "--contract", "hermes-agent-0.19.0", *args])
    return code, json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- slow upstream


@pytest.mark.parametrize("provider", ["nous", "xai"])
def test_a_late_first_byte_is_not_drift_and_spares_the_probe_budget(provider: str) -> None:
    with serve_emulator(scenario="slow-first-byte", provider=provider, first_byte_s=FIRST_BYTE_S) as emu:
        report, drift, skipped = _judged(emu.endpoint, request_budget_s=BUDGET_S)
    assert drift == []
    assert {n.reason for n in skipped} == {"upstream_slow"} and any(n.field == "routes[GET /v1/models]"
                                                                    for n in skipped)
    # after the first forwarded request got no answer in time, the rest of the forwarded routes were not sent
    assert sum(r.outcome == "timeout" for r in report.routes) == 1
    own = {r.name: r for r in report.routes}
    assert own["health"].status == 200 and own["unknown_v1"].outcome == "path_not_allowed"  # still judged


def test_a_long_answer_is_not_drift() -> None:
    with serve_emulator(scenario="slow-answer", answer_s=ANSWER_S) as emu:
        report, drift, skipped = _judged(emu.endpoint, request_budget_s=BUDGET_S)
    assert drift == [] and skipped and {n.reason for n in skipped} == {"upstream_slow"}
    chat = next(r for r in report.routes if r.name == "chat")
    assert chat.status == 200 and chat.ended == "deadline"  # the headers came; the body did not end in time
    assert next(r for r in report.routes if r.name == "models").transport_error == "upstream_slow"  # spared


# --------------------------------------------------------------------------- dead upstream


def test_dead_upstream_is_not_drift_and_the_e2e_fails_naming_the_upstream(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    with serve_emulator(scenario="upstream-unreachable") as emu:
        report, drift, skipped = _judged(emu.endpoint)
        code, doc = _smoke(capsys, "--endpoint", emu.endpoint, "--out", str(tmp_path))
    assert drift == [] and skipped and {n.reason for n in skipped} == {"upstream_down"}
    by = {r["notebook"]: r for r in doc["receipts"]}
    assert code == 1 and doc["verdict"] == "failed"
    assert by["e2e_smoke"]["verdict"] == "failed" and by["e2e_smoke"]["reason"] == "upstream_unreachable"
    assert by["wire_format_spike"]["reason"] == "upstream_down"
    sidecar = json.loads(Path(by["e2e_smoke"]["path"]).with_suffix(".receipt.json").read_text("utf-8"))
    hint = json.dumps(sidecar)
    assert "inference-api.nousresearch.com:443" in hint and "its upstream" in hint


def test_the_check_says_the_upstream_is_down() -> None:
    with serve_emulator(scenario="upstream-timeout") as emu:
        result = check(HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="m"))
    assert result.state == "error" and result.hint is not None and "its upstream" in result.hint


# --------------------------------------------------------------------------- 429


def test_429_on_models_is_blocked_with_retry_after(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: check said `error` (failed), so the smoke exited 1 even with --blocked-exit 0."""
    with serve_emulator(scenario="rate-limited", retry_after=7) as emu:
        result = check(HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="m"))
        code = main(["check", "--endpoint", emu.endpoint])
    assert (result.state, result.verdict, result.retry_after_s) == ("rate_limited", "blocked", 7.0)
    assert "Retry-After: 7 s" in (result.hint or "")
    assert code == 3 and "[RATE_LIMITED]" in capsys.readouterr().out


def test_rate_limited_scenario_smoke_is_blocked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with serve_emulator(scenario="rate-limited") as emu:
        code, doc = _smoke(capsys, "--endpoint", emu.endpoint, "--out", str(tmp_path))
    assert code == 3 and doc["verdict"] == "blocked"
    assert {r["verdict"] for r in doc["receipts"]} == {"blocked"}
    by = {r["notebook"]: r for r in doc["receipts"]}
    assert by["wire_format_spike"]["reason"] == "rate_limited" and by["adapter_check"]["reason"] == "rate_limited"


# --------------------------------------------------------------------------- unreachable proxy


def test_unreachable_probe_is_one_line_and_one_action(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 53 per-field drift lines (`… → (none)`)."""
    code = main(["probe", "--endpoint", UNREACHABLE, "--compare", "hermes-agent-0.19.0"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 3
    assert len(out) == 2 and "unreachable" in out[0] and out[1].startswith("action: start the proxy")
    assert not any("→" in line for line in out)
    code = main(["probe", "--endpoint", UNREACHABLE, "--compare", "hermes-agent-0.19.0", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["drift"] == [] and [n["reason"] for n in doc["not_judged"]] == ["unreachable"]


def test_unreachable_smoke_prints_the_action_once_and_no_drift(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    code = main(["smoke", "--endpoint", UNREACHABLE, "--out", str(tmp_path / "r"), "--no-html", "--summary-md",
                 str(summary)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 3
    actions = [line for line in lines if line.startswith("action: ")]
    assert len(actions) == 1 and "hermes proxy start --provider" in actions[0]
    assert not any("drift:" in line for line in lines)
    text = summary.read_text("utf-8")
    drift_section = text.split("### Wire drift", 1)[1].strip().splitlines()
    assert len(drift_section) <= 2 and "→" not in text
    assert text.count("start the proxy with") == 1


# --------------------------------------------------------------------------- the real proxy


@pytest.mark.real_proxy
@needs_hermes
def test_dead_upstream_behind_the_real_proxy() -> None:
    """The real proxy answers 502 upstream_unreachable itself: no drift, and the check names the upstream (xai: the
    credential's base_url, the host the proxy could not reach)."""
    from hermes_nb.rig.rig import real_proxy

    provider = "xai"
    with real_proxy("live", provider=provider, hermes_bin=HERMES_BIN) as rig:
        rig.upstream.close()  # the upstream dies; the proxy stays
        report, drift, skipped = _judged(rig.endpoint)
        result = check(HermesProxyRuntimeConfig(endpoint=rig.endpoint, model="m"))
    port = rig.upstream.endpoint.split(":")[2].split("/")[0]
    assert drift == [] and {n.reason for n in skipped} == {"upstream_down"} and report.provider == provider
    assert result.state == "error" and f"host 127.0.0.1:{port}" in (result.hint or "")
