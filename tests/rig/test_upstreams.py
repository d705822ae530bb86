"""Three upstreams behind the REAL proxy: the spike judges the proxy, whatever answers behind it.

For each upstream — the emulator's ``upstream`` profile, the deliberately minimal upstream and
llmock (a third-party OpenAI-compatible server from PyPI, in ``.venv-upstream``) — one live rig,
then ``hermes-nb probe --compare hermes-agent-0.19.0`` (exit 0, no drift; the upstream's own
differences listed as information, a stream difference behind an upstream that is not hermes_nb's
as nobody's) and, behind the two foreign upstreams, ``hermes-nb smoke --endpoint …`` (all three
notebooks pass; behind the emulator the xai smoke below and tests/rig/test_releases.py run it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_nb import RigError, UsageError
from hermes_nb.cli import main
from hermes_nb.emulator.app import MINIMAL_MODELS
from hermes_nb.rig.rig import RigHandle, real_proxy, upstream_command
from tests.helpers import RELEASES, ROOT, release_bin

HERMES_BIN = RELEASES["0.19"][0] if RELEASES["0.19"][0].is_file() else None
INSTALL_HINT = "no .venv-hermes: run `make rig-venv`"
LLMOCK = ROOT / ".venv-upstream" / "bin" / "llmock"
LLMOCK_COMMAND = f"{LLMOCK} serve --host 127.0.0.1 --port {{port}} --latency-ms 0"
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason=INSTALL_HINT)
#: upstream -> (rig argument, a model it lists)
UPSTREAMS = {
    "emulator": ("emulator", "nousresearch/hermes-4-405b"),
    "minimal": ("minimal", MINIMAL_MODELS[0]),
    "llmock": (LLMOCK_COMMAND, "gpt-4o"),
}


@pytest.fixture(scope="module", params=list(UPSTREAMS))
def live(request: pytest.FixtureRequest, shared_rig) -> Iterator[tuple[str, RigHandle, str]]:
    name = request.param
    if name == "llmock" and not LLMOCK.exists():
        pytest.skip("llmock is not installed: make upstream-venv")
    upstream, model = UPSTREAMS[name]
    if name == "emulator":
        yield name, shared_rig("0.19", "live"), model
        return
    with real_proxy("live", hermes_bin=release_bin("0.19"), upstream=upstream) as rig:
        yield name, rig, model


@pytest.mark.real_proxy
def test_probe_compare_has_no_drift_whatever_the_upstream(live: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    name, rig, model = live
    code = main(["probe", "--endpoint", rig.endpoint, "--compare", "hermes-agent-0.19.0", "--model", model, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["state"] == "live", name
    assert (code, report["drift"]) == (0, []), name
    differences = {d["field"] for d in report["upstream_differences"]}
    # a foreign upstream plays no stream variant: who shaped a stream cannot be told there
    assert report["upstream_known"] is (name == "emulator")
    assert all(d["owner"] in ("upstream", "unknown") for d in report["upstream_differences"])
    if name == "emulator":  # the contract was recorded with this upstream
        assert differences == set()
    else:  # neither sends system_fingerprint, and neither has /v1/completions
        assert "routes[POST /v1/chat/completions].json_keys" in differences
        assert "routes[POST /v1/completions].status" in differences
    if name == "minimal":  # its own 1 MiB cap, relayed by the proxy: the upstream's, not the proxy's
        assert "routes[POST /v1/chat/completions (1.5 MB body)].status" in differences
        assert "routes[POST /v1/embeddings].status" in differences
    by = {r["name"]: r for r in report["routes"]}
    assert by["chat_large"]["answered_by"] == "upstream" and by["chat_stream"]["ended"] == "clean"


@pytest.mark.real_proxy
def test_smoke_passes_all_three_notebooks_whatever_the_upstream(live: tuple, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    name, rig, model = live
    if name != "llmock":
        pytest.skip("behind the emulator: the xai smoke below and tests/rig/test_releases.py; minimal: the spike below")
    code = main(["smoke", "--endpoint", rig.endpoint, "--model", model, "--out", str(tmp_path), "--no-html",
                 "--json"])
    summary = json.loads(capsys.readouterr().out)
    verdicts = {job["notebook"]: job["verdict"] for job in summary["receipts"]}
    assert code == 0, (name, summary)
    assert verdicts == {"wire_format_spike": "passed", "adapter_check": "passed", "e2e_smoke": "passed"}, name
    # a live proxy whose release nobody named: the recorded releases it behaves as, never a local install's version
    assert summary["target_kind"] == "live"
    meta = json.loads(Path(summary["receipts"][0]["path"]).with_suffix(".receipt.json").read_text("utf-8"))
    assert "hermes-agent 0.19.0" in meta["receipt"]["hermes_agent_version"]
    assert meta["receipt"]["hermes_agent_version_source"] == "contract match: behaves as"


# --------------------------------------------------------------------------- choosing the upstream


def test_upstream_command_needs_a_port_placeholder() -> None:
    assert upstream_command("srv --port {port} --x", 4242) == ["srv", "--port", "4242", "--x"]
    with pytest.raises(UsageError, match=r"\{port\}"):
        upstream_command("srv --port 1", 0)
    with pytest.raises(UsageError, match="upstream command"):
        upstream_command("srv 'unclosed {port}", 0)


def test_bad_upstream_is_a_usage_error_before_anything_starts(tmp_path: Path) -> None:
    missing = tmp_path / "no-hermes-here"  # would be a RigError if the lookup ran first
    with pytest.raises(UsageError, match=r"\{port\}"), real_proxy("live", upstream="nonsense", hermes_bin=missing):
        pass
    with pytest.raises(UsageError, match="minimal upstream has one scenario"):
        with real_proxy("live", upstream="minimal", upstream_scenario="truncated", hermes_bin=missing):
            pass
    assert main(["rig", "--upstream", "nonsense", "--hermes-bin", str(missing)]) == 2


@pytest.mark.real_proxy
@needs_hermes
def test_an_upstream_command_that_dies_is_a_rig_error_with_its_output(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "dies.sh"
    script.write_text("#!/bin/sh\necho 'cannot bind the port' >&2\nexit 4\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)  # a relative command path is the caller's, not the rig's temp home's
    with pytest.raises(RigError, match="upstream command exited 4 before it answered: cannot bind"):
        with real_proxy("live", hermes_bin=HERMES_BIN, upstream="./dies.sh {port}"):
            pytest.fail("the rig must not start without its upstream")


def test_smoke_upstream_needs_rig_live(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["smoke", "--upstream", "minimal"]) == 2
    assert "an upstream sits behind the live rig" in capsys.readouterr().err
    assert main(["smoke", "--rig", "stale", "--upstream", "minimal"]) == 2


@pytest.mark.real_proxy
@needs_hermes
def test_smoke_rig_live_with_the_minimal_upstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["smoke", "--rig", "live", "--upstream", "minimal", "--model", MINIMAL_MODELS[0],
                 "--only", "wire_format_spike", "--out", str(tmp_path), "--no-html", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["target_kind"] == "rig"
    assert [r["verdict"] for r in summary["receipts"]] == ["passed"]


# --------------------------------------------------------------------------- the xai provider


@pytest.fixture
def live_xai(shared_rig) -> tuple[str, RigHandle, str]:
    """The real proxy with ``--provider xai``: its credential pool's ``base_url`` is the loopback upstream (the
    emulator, which lists Grok models behind an xai proxy)."""
    return "emulator", shared_rig("0.19", "live", "xai"), "grok-4.3"


@pytest.mark.real_proxy
def test_xai_probe_compare_selects_the_xai_contract_and_exits_0(live_xai: tuple,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 2 drift lines, the allowed-path list gaining /responses (nous' contract was used)."""
    name, rig, model = live_xai
    code = main(["probe", "--endpoint", rig.endpoint, "--compare", "hermes-agent-0.19.0", "--model", model])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "provider xai (xAI Grok OAuth)" in text.splitlines()[0]
    assert "drift vs hermes-agent-0.19.0 (hermes-agent-0.19.0-xai.json, provider xai): none" in text
    code = main(["probe", "--endpoint", rig.endpoint, "--compare", "hermes-agent-0.19.0", "--model", model, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["provider"] == "xai" and report["drift"] == []
    by = {r["name"]: r for r in report["routes"]}
    assert by["responses"]["answered_by"] == "upstream"  # forwarded by xai (the minimal upstream may 404 it)
    if name == "emulator":
        assert by["responses_stream"]["sse_events"][-1] == "response.completed"


@pytest.mark.real_proxy
def test_xai_smoke_passes_and_every_receipt_names_the_provider(live_xai: tuple, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    name, rig, model = live_xai
    code = main(["smoke", "--endpoint", rig.endpoint, "--model", model, "--out", str(tmp_path), "--no-html", "--json",
                 "--junit-xml", str(tmp_path / "junit.xml")])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, (name, summary)
    assert [r["verdict"] for r in summary["receipts"]] == ["passed"] * 3 and summary["provider"] == "xai"
    for receipt in summary["receipts"]:
        sidecar = json.loads(Path(receipt["path"]).with_suffix(".receipt.json").read_text("utf-8"))
        assert sidecar["receipt"]["provider"] == "xai", receipt["notebook"]
    index = json.loads((tmp_path / "index.json").read_text("utf-8"))
    assert {e["provider"] for e in index["receipts"]} == {"xai"}
    junit = (tmp_path / "junit.xml").read_text("utf-8")
    assert 'name="provider" value="xai"' in junit and "provider xai" in (tmp_path / "index.html").read_text("utf-8")
    # its answers come from hermes_nb's emulator (behind the proxy): no release claimed, never a local install's
    assert 'name="hermes_version" value="unknown"' in junit
