"""The kernel-side kit the notebooks call (target, config, summaries, verdict cell), and the verdict record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hermes_nb import CheckResult, NotebookFailed, WireReport, kit, resolve_runtime_config
from hermes_nb.core.manifest import manifest_template, save_manifest
from hermes_nb.emulator import serve_emulator
from hermes_nb.kit.job import artifact_digests, check_summary, run_summary, wire_summary
from hermes_nb.proxy.report import Drift
from hermes_nb.receipts import verdict
from hermes_nb.target import Target

CANARY = "sk-canary-nbkit-0123456789"


def test_a_job_reads_the_token_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", CANARY)
    with serve_emulator() as emu:
        job = kit.open_job("adapter_check", endpoint=emu.endpoint, model="m")
        assert job.config.auth_token.get_secret_value() == CANARY
        assert CANARY not in repr(job) and CANARY not in job._repr_text_() and CANARY not in job._repr_html_()
        runner = kit.open_job("adapter_check", target=job.target.to_parameter(), config=job.config.to_document())
        assert runner.config.auth_token.get_secret_value() == CANARY  # the masked document, made whole in the kernel
        assert CANARY not in str(job.config.to_document())
        job.close()
        runner.close()


def test_a_job_uses_a_manifest_as_the_base(tmp_path: Path) -> None:
    path = save_manifest(manifest_template(), tmp_path / "hermes-proxy.yaml")
    with serve_emulator() as emu:
        job = kit.open_job("adapter_check", endpoint=emu.endpoint, model="other", manifest=str(path), environ={})
        assert (job.config.provider, job.config.endpoint, job.config.model) == ("nous", emu.endpoint, "other")
        assert job.target.kind == "live" and job.target.provider == "nous"  # identified, not assumed
        job.close()


def test_the_runners_target_and_config_are_taken_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """Handed a target, the kernel asks the endpoint nothing: the identity step happened once, in the runner."""
    asked: list[str] = []
    monkeypatch.setattr("hermes_nb.kit.job.establish", lambda *a, **k: asked.append("establish"))
    target = Target(endpoint="http://127.0.0.1:9/v1", kind="rig", provider="xai", release="0.22.2.post1",
                    release_source="rig: /x/hermes")
    config = {"endpoint": "http://127.0.0.1:9/v1", "model": "grok-4.3", "provider": "xai", "auth_token": "**********"}
    job = kit.open_job("adapter_check", target=target.to_parameter(), config=config, environ={})
    assert asked == [] and job.target == target and job.config.model == "grok-4.3"
    assert job.config.auth_token.get_secret_value() == "hermes-proxy"  # a masked token is never sent as the bearer


def test_no_endpoint_anywhere_is_an_embedded_emulator_stopped_with_the_job() -> None:
    import httpx

    job = kit.open_job("adapter_check", model="m", environ={})
    assert job.target.kind == "emulator" and job.config.endpoint == job.target.endpoint
    assert job.config.origin("endpoint") == "emulator" and job.config.origin("model") == "argument"
    assert httpx.get(job.target.endpoint + "/models", timeout=5).status_code == 200
    job.close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(job.target.endpoint + "/models", timeout=2)


def test_artifact_digests_only_existing(tmp_path: Path) -> None:
    (tmp_path / "runtime-final.txt").write_text("x")
    digests = artifact_digests(tmp_path)
    assert list(digests) == ["runtime-final.txt"] and len(digests["runtime-final.txt"]) == 64
    assert artifact_digests(None) == {}


def test_verdict_summary_validates_and_redacts() -> None:
    with pytest.raises(ValueError):
        verdict.verdict_summary("j", "maybe", reason="r")
    s = verdict.verdict_summary("j", "failed", reason="r", errors=[f"bad {CANARY}"])
    assert CANARY not in str(s) and s["schema"] == verdict.VERDICT_SCHEMA


def _target(kind: str = "emulator") -> Target:
    return Target(endpoint="http://127.0.0.1:5/v1", kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("state, verdict", [
    ("ready", "passed"), ("locked", "blocked"), ("unreachable", "blocked"), ("slow", "blocked"),
    ("not_local", "blocked"), ("misconfigured", "failed"), ("error", "failed"),
])
def test_check_summary_maps_states(state: str, verdict: str) -> None:
    result = CheckResult(available=state == "ready", state=state, model="m",
                         errors=["e"] if verdict != "passed" else [])
    summary = check_summary(result, target=_target())
    assert summary["verdict"] == verdict and summary["reason"] == state


def test_wire_summary_drift_unreachable_guarded_passed() -> None:
    ok = WireReport(endpoint="x", state="live", reachable=True)
    assert wire_summary(ok, target=_target(), model="m", contract="c")["verdict"] == "passed"
    drifted = WireReport(endpoint="x", state="live", reachable=True,
                         drift=[Drift(field="state", expected="live", observed="stale")])
    drift = wire_summary(drifted, target=_target(), model="m", contract="c")
    assert drift["verdict"] == "failed" and "state: live → stale" in drift["errors"][0]
    down = wire_summary(WireReport(endpoint="x", state="unreachable", action="start it"), target=_target(),
                            model="m", contract="c")
    assert down["verdict"] == "blocked" and down["reason"] == "unreachable" and down["details"]["hint"] == "start it"
    guarded = wire_summary(WireReport(endpoint="x", state="not_local", reachable=True, action="use 127.0.0.1"),
                               target=_target(), model="m", contract="c")
    assert (guarded["verdict"], guarded["reason"], guarded["details"]["drift"]) == ("blocked", "not_local", [])


@dataclass
class _Run:
    result: dict
    run_dir: Path
    run_id: str = "r"
    exit_code: int = 0
    outcome: object = None
    exchange: object = None
    extra: dict = field(default_factory=dict)


@pytest.mark.parametrize("status, verdict", [("passed", "passed"), ("blocked", "blocked"), ("failed", "failed"),
                                             ("cancelled", "failed")])
def test_run_summary_takes_the_runtime_status_and_artifacts(tmp_path: Path, status: str, verdict: str) -> None:
    (tmp_path / "runtime-result.yaml").write_text("status: x\n")
    config = resolve_runtime_config(endpoint="http://127.0.0.1:5/v1", model="m",
                                    environ={"HERMES_NB_AUTH_TOKEN": CANARY})
    summary = run_summary(_Run({"status": status, "errors": [f"leak {CANARY}"]}, tmp_path),
                                target=_target(), config=config)
    assert summary["verdict"] == verdict and list(summary["artifacts"]) == ["runtime-result.yaml"]
    assert summary["run_dir"] == str(tmp_path) and CANARY not in str(summary)


def test_a_run_job_runs_under_a_temporary_root_the_job_removes() -> None:
    job = kit.open_job("e2e_smoke", prompt="hello", environ={})
    result = job.run()
    assert result.status == "passed" and result.run_dir.is_dir() and result.plan.endpoint == job.target.endpoint
    job.close()
    assert not result.run_dir.exists()


def test_a_mission_s_overrides_are_a_layer_under_the_notebook_s_options(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("schema_version: uh.mission.v0\nid: m1\ntitle: t\nobjective: o\n"
                    "runtime_config_overrides: {model: mission-model, temperature: 0.5}\n")
    with serve_emulator(models=["mission-model", "flag-model"]) as emu:
        job = kit.open_job("e2e_smoke", mission=str(path), endpoint=emu.endpoint, root=str(tmp_path), environ={})
        sent = job.run()
        flagged = kit.open_job("e2e_smoke", mission=str(path), endpoint=emu.endpoint, model="flag-model",
                               root=str(tmp_path), environ={}).run()
        bodies = [r.json for r in emu.requests if r.path.endswith("/chat/completions")]
    assert sent.status == flagged.status == "passed"
    assert [(b["model"], b["temperature"]) for b in bodies] == [("mission-model", 0.5), ("flag-model", 0.5)]


def test_record_verdict_displays_then_raises_unless_passed(monkeypatch) -> None:
    shown = []
    monkeypatch.setattr("hermes_nb.kit.job.display", lambda obj, **kw: shown.append((obj, kw)))
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


def test_the_verdict_cell_shows_stable_fields_escaped_and_masked_and_a_blocked_job_s_action() -> None:
    from hermes_nb.kit.job import verdict_html

    summary = {"job": "e2e_smoke", "verdict": "failed", "reason": "<script>x</script>", "target": "emulator",
               "endpoint": "http://127.0.0.1:5/v1", "model": "m", "errors": [f"leak {CANARY}"],
               "artifacts": {"runtime-result.yaml": "cd" * 32}, "run_dir": "/tmp/x"}
    html = verdict_html(summary)
    assert "e2e_smoke" in html and "cd" * 32 not in html and "/tmp/x" not in html  # no digests, no paths
    assert "<script>" not in html and "&lt;script&gt;" in html and CANARY not in html and "leak" in html
    blocked = verdict_html({**summary, "verdict": "blocked", "reason": "auth", "details": {"hint": "re-auth now"}})
    assert "operator action" in blocked and "re-auth now" in blocked
