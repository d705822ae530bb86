"""The kernel-side kit the notebooks call (target, config, summaries, verdict cell), and the verdict record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hermes_nb import CheckResult, ConfigError, NotebookFailed, WireReport, kit
from hermes_nb.core.manifest import manifest_template, save_manifest
from hermes_nb.proxy.report import Drift
from hermes_nb.receipts import verdict

CANARY = "sk-canary-nbkit-0123456789"


def test_runtime_config_reads_the_token_from_env_only() -> None:
    config = kit.runtime_config("http://127.0.0.1:1/v1", "m", environ={"HERMES_NB_AUTH_TOKEN": CANARY},
                                  request_timeout_s=2.5)
    assert config.auth_token.get_secret_value() == CANARY and config.request_timeout_ms == 2500
    assert CANARY not in repr(config) and CANARY not in str(config.to_document())
    assert kit.runtime_config("http://127.0.0.1:1/v1", "m", environ={}).auth_token.get_secret_value() == "hermes-proxy"
    with pytest.raises(ConfigError):
        kit.runtime_config("http://127.0.0.1:1/v1", "m", request_timeout_s=0, environ={})


def test_runtime_config_uses_a_manifest_as_the_base(tmp_path: Path) -> None:
    path = save_manifest(manifest_template(), tmp_path / "hermes-proxy.yaml")
    config = kit.runtime_config("http://127.0.0.1:2/v1", "other", manifest=str(path), environ={})
    assert config.provider == "nous" and config.endpoint == "http://127.0.0.1:2/v1" and config.model == "other"


def test_given_target_starts_nothing_and_cleans_its_temp_dirs() -> None:
    config = kit.runtime_config("http://127.0.0.1:9/v1/", environ={})
    target = kit.start_target(config)
    assert target.kind == "given" and target.endpoint == "http://127.0.0.1:9/v1" and target.hermes_bin is None
    assert target.config is config and target.point(config) is config
    tmp = Path(target.temp_dir())
    assert tmp.is_dir()
    target.close()
    assert not tmp.exists()


def test_an_emulator_handed_in_is_the_target_and_is_left_to_its_owner() -> None:
    """``emulator=``: the smoke's runner started the notebook's emulator; the kernel uses it and starts none."""
    import httpx

    from hermes_nb.emulator import serve_emulator

    config = kit.runtime_config(None, "m", environ={})
    with serve_emulator() as emu:
        target = kit.start_target(config, scenario="ok", emulator=emu.endpoint + "/")
        assert (target.kind, target.endpoint, target.origin) == ("emulator", emu.endpoint, "emulator")
        assert target.handle is None and target.hermes_bin is False  # an emulator receipt never asks the local hermes
        assert target.config.endpoint == emu.endpoint and target.config.origin("endpoint") == "emulator"
        target.close()
        assert httpx.get(emu.endpoint + "/models", timeout=5).status_code == 200  # still its owner's
    # a configured endpoint still wins: the emulator parameter is only for "no endpoint anywhere"
    given = kit.start_target(kit.runtime_config("http://127.0.0.1:9/v1", "m", environ={}),
                             emulator="http://127.0.0.1:8/v1")
    assert (given.kind, given.endpoint) == ("given", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="emulator"):
        kit.start_target(config, emulator="not a url")


def test_emulator_target_serves_until_closed() -> None:
    import httpx

    config = kit.runtime_config(None, "m", environ={})
    with kit.start_target(config, scenario="ok") as target:
        assert target.kind == "emulator" and target.hermes_bin is False
        # the one resolution, aimed at the emulator: nothing else changes
        assert target.config.endpoint == target.endpoint != config.endpoint
        assert target.config.origin("endpoint") == "emulator" and target.config.origin("model") == "argument"
        assert target.config.model_dump(exclude={"endpoint"}) == config.model_dump(exclude={"endpoint"})
        assert httpx.get(target.endpoint + "/models", timeout=5).status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(target.endpoint + "/models", timeout=2)


def test_artifact_digests_only_existing(tmp_path: Path) -> None:
    (tmp_path / "runtime-final.txt").write_text("x")
    digests = kit.artifact_digests(tmp_path)
    assert list(digests) == ["runtime-final.txt"] and len(digests["runtime-final.txt"]) == 64
    assert kit.artifact_digests(None) == {}


def test_verdict_summary_validates_and_redacts() -> None:
    with pytest.raises(ValueError):
        verdict.verdict_summary("j", "maybe", reason="r")
    s = verdict.verdict_summary("j", "failed", reason="r", errors=[f"bad {CANARY}"])
    assert CANARY not in str(s) and s["schema"] == verdict.VERDICT_SCHEMA


def _target(kind: str = "emulator") -> kit.Target:
    return kit.Target(endpoint="http://127.0.0.1:5/v1", kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("state, verdict", [
    ("ready", "passed"), ("locked", "blocked"), ("unreachable", "blocked"), ("misconfigured", "failed"),
    ("error", "failed"),
])
def test_check_summary_maps_states(state: str, verdict: str) -> None:
    result = CheckResult(available=state == "ready", state=state, model="m",
                         errors=["e"] if verdict != "passed" else [])
    summary = kit.check_summary(result, target=_target())
    assert summary["verdict"] == verdict and summary["reason"] == state


def test_wire_summary_drift_unreachable_passed() -> None:
    ok = WireReport(endpoint="x", state="live", reachable=True)
    assert kit.wire_summary(ok, [], target=_target(), model="m", contract="c")["verdict"] == "passed"
    drift = kit.wire_summary(ok, [Drift(field="state", expected="live", observed="stale")], target=_target(),
                               model="m", contract="c")
    assert drift["verdict"] == "failed" and "state: live → stale" in drift["errors"][0]
    down = kit.wire_summary(WireReport(endpoint="x", state="unreachable"), [], target=_target(), model="m",
                              contract="c")
    assert down["verdict"] == "blocked" and "unreachable" in down["errors"][0]


@dataclass
class _Run:
    result: dict
    run_dir: Path
    run_id: str = "r"
    exit_code: int = 0
    outcome: object = None
    extra: dict = field(default_factory=dict)


@pytest.mark.parametrize("status, verdict", [("passed", "passed"), ("blocked", "blocked"), ("failed", "failed"),
                                             ("cancelled", "failed")])
def test_run_summary_takes_the_runtime_status_and_artifacts(tmp_path: Path, status: str, verdict: str) -> None:
    (tmp_path / "runtime-result.yaml").write_text("status: x\n")
    config = kit.runtime_config("http://127.0.0.1:5/v1", "m", environ={"HERMES_NB_AUTH_TOKEN": CANARY})
    summary = kit.run_summary(_Run({"status": status, "errors": [f"leak {CANARY}"]}, tmp_path),
                                target=_target(), config=config)
    assert summary["verdict"] == verdict and list(summary["artifacts"]) == ["runtime-result.yaml"]
    assert summary["run_dir"] == str(tmp_path) and CANARY not in str(summary)


def test_prepare_job_adhoc_or_mission_file(tmp_path: Path) -> None:
    job = kit.prepare_job(None, "hello", environ={})
    assert job.mission.id == "adhoc" and job.root is None and job.config.origin("endpoint") == "default"
    with pytest.raises(ConfigError):
        kit.prepare_job(str(tmp_path / "missing.yaml"), "x", environ={})
    path = tmp_path / "m.yaml"
    path.write_text("schema_version: uh.mission.v0\nid: m1\ntitle: t\nobjective: o\nworkflow_profile: w\n"
                    "runtime_config_overrides: {model: mission-model, request_timeout_ms: 4000}\n")
    job = kit.prepare_job(str(path), "ignored", model=None, request_timeout_s=2.0, environ={})
    # the mission's overrides are a layer; the notebook's arguments win over them
    assert (job.mission.id, job.config.model, job.config.request_timeout_ms) == ("m1", "mission-model", 2000)
    assert any("workflow 'w' not looked up" in w for w in job.warnings)


def test_run_job_runs_under_a_temporary_root_the_target_removes() -> None:
    job = kit.prepare_job(None, "hello", environ={})
    with kit.start_target(job.config) as target:
        result = kit.run_job(job, target)
        assert result.status == "passed" and result.run_dir.is_dir()
        assert result.plan.endpoint == target.endpoint
    assert not result.run_dir.exists()


def test_record_verdict_displays_then_raises_unless_passed(monkeypatch) -> None:
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append((obj, kw)))
    passed = verdict.verdict_summary("j", "passed", reason="ok")
    kit.record_verdict(passed)
    blocked = verdict.verdict_summary("j", "blocked", reason="auth", errors=["hermes-proxy: locked"])
    with pytest.raises(NotebookFailed, match="j blocked: hermes-proxy: locked"):
        kit.record_verdict(blocked)
    assert [kw["metadata"][verdict.VERDICT_MIME]["verdict"] for _, kw in shown] == ["passed", "blocked"]
    assert shown[0][0]["text/plain"] == "verdict: passed (ok)"
    nb = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data", "metadata": kw["metadata"]}]}
                    for _, kw in shown]}
    assert verdict.find_verdict(nb)["verdict"] == "blocked"
    assert verdict.find_verdict({"cells": []}) is None
