"""Every provider the proxy ships: one table of operator actions, detection, model defaults.

Against the emulator fronting ``nous`` or ``xai`` (its ``/health`` name, forwarded paths and texts follow
the provider, as the real proxy's do); the real proxy's xai states are in tests/proxy/test_rig.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_nb import CheckResult, ConfigError, HermesProxyRuntimeConfig, check, kit, resolve_runtime_config
from hermes_nb.cli import main
from hermes_nb.core.config import validate_config
from hermes_nb.core.providers import (
    PROVIDER_TABLE,
    PROXY_PROVIDERS,
    auth_store_id,
    logged_out_hint,
    provider_by_allowed_paths,
    provider_by_display_name,
    proxy_remediation,
    reauth_hint,
    start_hint,
)
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.scenarios import DEFAULT_MODELS
from hermes_nb.proxy.check import resolve_model
from hermes_nb.target import allowed_paths_of, detect_provider
from tests.helpers import ROOT, run_smoke_on

XAI_STALE = ("No available xAI OAuth credentials found. Run `hermes auth reset xai-oauth` or re-authenticate with "
             "`hermes auth add xai-oauth --type oauth`.")


@pytest.fixture(scope="module")
def xai() -> Iterator[Any]:
    with serve_emulator(provider="xai") as emu:
        yield emu


@pytest.fixture(scope="module")
def nous() -> Iterator[Any]:
    with serve_emulator() as emu:
        yield emu


# --------------------------------------------------------------------------- the one table


def test_the_table_matches_the_proxy_adapters_of_the_installed_hermes() -> None:
    """The rows are hermes-agent's own facts: names, display names, forwarded paths (hermes_cli/proxy/adapters)."""
    sites = sorted((ROOT / ".venv-hermes").glob("lib/python*/site-packages"))
    if not sites:
        pytest.skip("no .venv-hermes: make rig-venv")
    code = ("import json; from hermes_cli.proxy.adapters import ADAPTERS\n"
            "print(json.dumps({n: [a().display_name, sorted(a().allowed_paths)] for n, a in ADAPTERS.items()}))")
    done = subprocess.run([str(ROOT / ".venv-hermes" / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}, check=True)
    import json

    shipped = json.loads(done.stdout)
    assert sorted(shipped) == sorted(PROXY_PROVIDERS)
    for row in PROVIDER_TABLE:
        assert shipped[row.id] == [row.display_name, sorted(row.allowed_paths)], row.id


def test_nous_actions_are_written_once_in_the_package() -> None:
    """The before-stop check of the brief: `auth status nous|auth add nous` at most twice in hermes_nb/."""
    found = subprocess.run(["git", "grep", "-cE", "auth status nous|auth add nous", "--", "hermes_nb/*.py"],
                           cwd=ROOT, capture_output=True, text=True, check=False).stdout
    assert sum(int(line.rsplit(":", 1)[1]) for line in found.splitlines()) <= 2, found


@pytest.mark.parametrize(("provider", "message", "must", "must_not"), [
    (None, XAI_STALE, ["the proxy says: Run `hermes auth reset xai-oauth`", "hermes auth add xai-oauth --type oauth"],
     ["nous"]),
    ("xai", None, ["hermes auth status xai-oauth", "hermes auth add xai-oauth --type oauth",
                   "hermes auth reset xai-oauth"], ["nous", "status xai`"]),
    ("nous", "Failed to refresh Nous Portal credentials: [Errno 111] Connection refused",
     ["hermes auth status nous", "hermes auth add nous"], ["xai"]),
    (None, "Failed to refresh Nous Portal credentials: boom", ["hermes auth status nous"], ["xai"]),
    (None, None, ["hermes proxy status", "hermes auth add nous", "hermes auth add xai-oauth --type oauth"],
     ["<provider>", "auth status"]),
])
def test_reauth_hint(provider: str | None, message: str | None, must: list[str], must_not: list[str]) -> None:
    hint = reauth_hint(provider, message)
    for needle in must:
        assert needle in hint
    for needle in must_not:
        assert needle not in hint


def test_proxy_remediation_keeps_the_sentences_that_name_a_command() -> None:
    assert proxy_remediation(XAI_STALE) == ("Run `hermes auth reset xai-oauth` or re-authenticate with "
                                            "`hermes auth add xai-oauth --type oauth`.")
    assert proxy_remediation("Failed to refresh Nous Portal credentials: Invalid refresh token") is None


def test_start_and_logged_out_hints_name_the_provider() -> None:
    assert "--provider xai" in start_hint("xai") and "hermes auth add xai-oauth --type oauth" in start_hint("xai")
    assert "nous" not in start_hint("xai")
    assert "--provider nous`" in start_hint(None) and "--provider xai`" in start_hint(None)
    assert "<" not in start_hint(None) and "<" not in logged_out_hint(None)
    assert "hermesx proxy start --provider xai" in start_hint("xai", "hermesx")
    assert logged_out_hint("xai") == ("run `hermes auth add xai-oauth --type oauth` (see `hermes auth`) before "
                                      "`hermes proxy start --provider xai`")


def test_provider_names_and_auth_store_ids() -> None:
    assert auth_store_id("xai") == "xai-oauth" and auth_store_id("nous") == "nous"
    assert provider_by_display_name("xAI Grok OAuth") == "xai" and provider_by_display_name("Nous Portal") == "nous"
    assert provider_by_display_name("Claude Pro") is None


def test_config_provider_takes_the_proxy_names_and_explains_the_auth_store_id() -> None:
    assert validate_config({"model": "m", "provider": "xai"}).provider == "xai"
    with pytest.raises(ConfigError, match=r"'xai-oauth' is the `hermes auth` id; provider takes the proxy's name: "
                                          r"'xai'"):
        validate_config({"model": "m", "provider": "xai-oauth"})


# --------------------------------------------------------------------------- detection


def test_allowed_paths_of_a_path_not_allowed_message() -> None:
    message = ("Path /v1/x is not forwarded by this proxy. Allowed: /chat/completions, /completions, /embeddings, "
               "/models, /responses")
    assert provider_by_allowed_paths(allowed_paths_of(message) or []) == "xai"
    assert allowed_paths_of("no list here") is None


def test_detection_sources_and_the_mismatch_warning() -> None:
    facts = detect_provider(health={"status": "ok", "upstream": "xAI Grok OAuth", "authenticated": True},
                            configured="nous")
    assert (facts.provider, facts.source, facts.upstream) == ("xai", "/health", "xAI Grok OAuth")
    assert len(facts.warnings) == 1 and "configured 'nous'" in facts.warnings[0] and "'xai'" in facts.warnings[0]
    by_paths = detect_provider(allowed_message="Path /v1/a is not forwarded by this proxy. Allowed: "
                                               "/chat/completions, /completions, /embeddings, /models")
    assert (by_paths.provider, by_paths.source) == ("nous", "path_not_allowed")
    assert detect_provider(configured="xai").source == "config"
    assert detect_provider().provider is None


@pytest.mark.parametrize("provider", PROXY_PROVIDERS)
def test_check_and_probe_name_the_provider(provider: str, nous: Any, xai: Any) -> None:
    from hermes_nb.proxy.probe import probe

    emu = {"nous": nous, "xai": xai}[provider]
    result = check(HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="nousresearch/hermes-4-405b"))
    assert (result.provider, result.provider_source) == (provider, "/health")
    assert f"provider {provider}" in result._repr_text_() and f">{provider} (" in result._repr_html_()
    report = probe(emu.endpoint, budget_s=20)
    assert report.provider == provider and report.upstream == {"nous": "Nous Portal", "xai": "xAI Grok OAuth"}[provider]
    assert ("/responses" in (report.allowed_paths or [])) is (provider == "xai")


def test_a_configured_provider_the_proxy_does_not_front_is_a_warning(xai: Any) -> None:
    result = check(HermesProxyRuntimeConfig(endpoint=xai.endpoint, model="grok-4.3", provider="nous"))
    assert result.state == "ready" and result.provider == "xai"
    assert any("configured 'nous'" in w and "fronts 'xai'" in w for w in result.warnings)


def test_stale_xai_check_is_locked_with_the_proxys_own_command_and_no_nous(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_emulator(provider="xai", scenario="auth-stale") as emu:
        code = main(["check", "--endpoint", emu.endpoint, "--json"])
    out = capsys.readouterr().out
    assert code == 3
    import json

    doc = json.loads(out)
    assert doc["state"] == "locked" and doc["provider"] == "xai"
    assert "hermes auth add xai-oauth --type oauth" in doc["hint"] and "nous" not in doc["hint"]


# --------------------------------------------------------------------------- model defaults per provider


def test_resolve_model_per_provider() -> None:
    unset = resolve_runtime_config(environ={})
    assert resolve_model(unset, "xai").model == "grok-4.3" and resolve_model(unset, "xai").origin == "default for xai"
    assert resolve_model(unset, "nous").model == "nousresearch/hermes-4-405b"
    choice = resolve_model(unset, "xai", ["nousresearch/hermes-4-405b", "hermes-4-405b"])
    assert not choice.usable and choice.suggestion in ("nousresearch/hermes-4-405b", "hermes-4-405b")
    assert "grok-4.3" in (choice.error or "") and "nousresearch/hermes-4-405b" in (choice.error or "")
    chosen = resolve_runtime_config(environ={}, model="x")
    assert resolve_model(chosen, "xai", ["y"]).model == "x" and resolve_model(chosen, "xai", ["y"]).usable


def test_a_configured_provider_picks_its_default_model() -> None:
    config = resolve_runtime_config(environ={"HERMES_NB_PROVIDER": "xai"})
    assert config.model == "grok-4.3" and config.origin("model") == "default"


def test_check_without_a_model_uses_the_providers_default(xai: Any) -> None:
    result = check(resolve_runtime_config(environ={}, endpoint=xai.endpoint))
    assert (result.state, result.model, result.model_origin) == ("ready", "grok-4.3", "default for xai")


def test_check_without_a_model_names_the_listed_models_and_suggests_one() -> None:
    """An xai proxy whose upstream lists no grok-4.3: the check says so, names the list and suggests one."""
    with serve_emulator(provider="xai", models=list(DEFAULT_MODELS)) as xai:
        result = check(resolve_runtime_config(environ={}, endpoint=xai.endpoint))
        listed = resolve_runtime_config(environ={}, endpoint=xai.endpoint, model="nousresearch/hermes-4-70b")
        assert check(listed).state == "ready"
    assert result.state == "misconfigured" and result.model == "grok-4.3"
    assert result.model_origin == "default for xai" and result.model_suggestion in result.models
    assert "nousresearch/hermes-4-405b" in result.errors[0] and f"--model {result.model_suggestion}" in result.errors[0]


def test_e2e_and_adapter_check_agree_on_the_resolved_model(tmp_path: Path) -> None:
    """Before: the e2e notebook passed with nous' default on an xai proxy while check refused it."""

    with serve_emulator(provider="xai", models=list(DEFAULT_MODELS)) as xai:
        result = run_smoke_on(endpoint=xai.endpoint, out_dir=tmp_path, html=False,
                           only=["adapter_check", "e2e_smoke"])
        sent = [r for r in xai.requests if r.path.endswith("/chat/completions")]
        chosen = run_smoke_on(endpoint=xai.endpoint, model="nousresearch/hermes-4-70b", out_dir=tmp_path,
                           html=False, only=["adapter_check", "e2e_smoke"])
        unlisted = run_smoke_on(endpoint=xai.endpoint, model="grok-unlisted-9", out_dir=tmp_path,
                             html=False, only=["adapter_check", "e2e_smoke"])
        sent_unlisted = [r for r in xai.requests if r.path.endswith("/chat/completions")
                         and (r.json or {}).get("model") == "grok-unlisted-9"]
    by = {r.name: r for r in result.runs}
    assert by["adapter_check"].verdict == by["e2e_smoke"].verdict == "failed"
    assert by["adapter_check"].summary["model"] == by["e2e_smoke"].summary["model"] == "grok-4.3"
    assert by["e2e_smoke"].reason == "model-not-listed"
    assert all(r.summary["provider"] == "xai" for r in result.runs)
    assert not sent, "a model the proxy does not list is not sent"
    assert [r.verdict for r in chosen.runs] == ["passed", "passed"]
    assert {r.summary["model"] for r in chosen.runs} == {"nousresearch/hermes-4-70b"}
    # a configured model the proxy does not list: both notebooks fail on it, and it is not sent
    assert [r.verdict for r in unlisted.runs] == ["failed", "failed"]
    assert {r.name: r for r in unlisted.runs}["e2e_smoke"].reason == "model-not-listed"
    assert not sent_unlisted


def test_an_unlisted_model_is_held_back_whoever_chose_it() -> None:
    """check and e2e agree on an unlisted model: configured or the provider's default, it is not sent."""
    with serve_emulator(provider="xai") as xai:
        chosen = kit.open_job("e2e_smoke", endpoint=xai.endpoint, model="grok-4.5", environ={})
        held = chosen.run()
        default = kit.open_job("e2e_smoke", endpoint=xai.endpoint, environ={})
        ran = default.run()
        sent = [r.json["model"] for r in xai.requests if r.path.endswith("/chat/completions")]
    assert isinstance(held, CheckResult) and held.state == "misconfigured" and held.model == "grok-4.5"
    assert ran.status == "passed" and sent == ["grok-4.3"]  # the default of the provider the proxy fronts
    chosen.close()
    default.close()

