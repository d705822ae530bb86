"""promote: experimental → active only on a verified, passed, live e2e_smoke receipt."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import yaml

from hermes_nb.cli import main
from hermes_nb.core.manifest import load_manifest, manifest_template, save_manifest
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import append_index, index_entry
from hermes_nb.receipts.verify import RECORDS_HEADING, PromotionRefused, check_receipt, promote
from hermes_nb.receipts.write import write_receipt
from tests.helpers import run_smoke_on

CANARY = "sk-canary-promote-0123456789"


def _receipt(directory: Path, *, notebook: str = "e2e_smoke", verdict: str = "passed", kind: str = "live",
             run_id: str = "20260101T000000Z-abcdef") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(1)")]
    meta = {"schema": "hermes-nb.receipt.v1", "notebook": notebook, "run_id": run_id, "verdict": verdict,
            "reason": "ok" if verdict == "passed" else "auth", "target_kind": kind,
            "endpoint": "http://127.0.0.1:8645/v1", "model": "nousresearch/hermes-4-405b",
            "hermes_agent_version": "0.19.0", "started_at": "2026-01-01T00:00:00.000Z", "duration_s": 2.0}
    files = write_receipt(nb, directory / "2026-01-01" / run_id, notebook, meta, redactor=Redactor(),
                          page=True)
    append_index(directory, [index_entry(directory, files, meta)], redactor=Redactor())
    return files.notebook


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / ".harness" / "adapters" / "hermes-proxy.yaml"
    save_manifest(manifest_template(), path)
    assert load_manifest(path).status == "experimental"
    return path


@pytest.fixture
def runbook(tmp_path: Path) -> Path:
    path = tmp_path / "hermes-proxy-smoke.md"
    path.write_text(f"# Smoke\n\ntext\n\n{RECORDS_HEADING}\n\n")
    return path


def test_promotes_on_a_live_passed_e2e_receipt(tmp_path: Path, manifest: Path, runbook: Path) -> None:
    receipt = _receipt(tmp_path / "receipts")
    result = promote(receipt, manifest=manifest, runbook=runbook)
    assert load_manifest(manifest).status == "active"
    text = runbook.read_text()
    assert text.count("promoted") == 1 and str(receipt) in text and result.receipt_sha256 in text
    assert "nousresearch/hermes-4-405b" in text and "http://127.0.0.1:8645/v1" in text
    assert text.index(RECORDS_HEADING) < text.index(result.receipt_sha256)
    # the rest of the manifest is kept
    doc = yaml.safe_load(manifest.read_text())
    assert doc["id"] == "hermes-proxy" and doc["config"]["runtime_config"]["endpoint"].endswith("/v1")


@pytest.mark.parametrize("kwargs, reason", [
    ({"kind": "emulator"}, "an emulator receipt"),
    ({"kind": "rig"}, "a rig receipt"),
    ({"verdict": "failed"}, "verdict is 'failed'"),
    ({"verdict": "blocked"}, "verdict is 'blocked'"),
    ({"notebook": "adapter_check"}, "only an e2e_smoke receipt can promote"),
])
def test_refuses_with_the_reason(tmp_path: Path, manifest: Path, runbook: Path, kwargs, reason) -> None:
    receipt = _receipt(tmp_path / "receipts", **kwargs)
    before = runbook.read_text()
    with pytest.raises(PromotionRefused) as info:
        promote(receipt, manifest=manifest, runbook=runbook)
    assert any(reason in r for r in info.value.reasons), info.value.reasons
    assert load_manifest(manifest).status == "experimental" and runbook.read_text() == before


def test_refuses_a_tampered_receipt(tmp_path: Path, manifest: Path, runbook: Path) -> None:
    receipt = _receipt(tmp_path / "receipts", kind="emulator")
    nb = nbformat.read(str(receipt), as_version=4)
    nb.metadata.receipt["target_kind"] = "live"  # forge the target kind
    nbformat.write(nb, str(receipt))
    with pytest.raises(PromotionRefused) as info:
        promote(receipt, manifest=manifest, runbook=runbook)
    assert any(r.startswith("digest mismatch") for r in info.value.reasons)
    assert load_manifest(manifest).status == "experimental"


def test_refuses_a_receipt_with_a_secret(tmp_path: Path, manifest: Path, runbook: Path) -> None:
    receipt = _receipt(tmp_path / "receipts")
    html = receipt.with_suffix(".html")
    html.write_text(html.read_text() + f"<!-- {CANARY} -->")
    _, reasons = check_receipt(receipt, secrets=[CANARY])
    assert any("secret found" in r for r in reasons) and not any(CANARY in r for r in reasons)


def test_refuses_a_rewritten_sidecar_via_the_index(tmp_path: Path, manifest: Path, runbook: Path) -> None:
    from hermes_nb.receipts.write import receipt_digest

    receipt = _receipt(tmp_path / "receipts", verdict="failed")
    sidecar_path = receipt.with_name("e2e_smoke.receipt.json")
    nb = nbformat.read(str(receipt), as_version=4)
    nb.metadata.receipt["verdict"] = "passed"
    nbformat.write(nb, str(receipt))
    from hermes_nb.core.io import sha256_file

    sidecar = json.loads(sidecar_path.read_text())
    sidecar["receipt"] = dict(nb.metadata.receipt)
    sidecar["receipt_sha256"] = receipt_digest(nb.metadata.receipt)
    sidecar["files"]["e2e_smoke.ipynb"] = sha256_file(receipt)
    sidecar_path.write_text(json.dumps(sidecar))
    with pytest.raises(PromotionRefused) as info:
        promote(receipt, manifest=manifest, runbook=runbook)
    assert any("digest mismatch with the index" in r for r in info.value.reasons)


def test_refuses_an_already_active_manifest(tmp_path: Path, manifest: Path, runbook: Path) -> None:
    receipt = _receipt(tmp_path / "receipts")
    promote(receipt, manifest=manifest, runbook=runbook)
    with pytest.raises(PromotionRefused) as info:
        promote(receipt, manifest=manifest, runbook=runbook)
    assert any("status 'active'" in r for r in info.value.reasons)


def test_cli_exit_codes(tmp_path: Path, manifest: Path, runbook: Path, capsys) -> None:
    emulator = _receipt(tmp_path / "a", kind="emulator")
    args = ["--manifest", str(manifest), "--runbook", str(runbook), "--json"]
    assert main(["promote", "--receipt", str(emulator), *args]) == 1
    refused = json.loads(capsys.readouterr().out)
    assert refused["exit_code"] == 1 and "emulator" in refused["error"]
    assert main(["promote", "--receipt", str(tmp_path / "missing.ipynb"), *args]) == 2
    capsys.readouterr()
    assert main(["promote", "--receipt", str(emulator), "--manifest", str(tmp_path / "none.yaml"), "--json"]) == 2
    capsys.readouterr()
    live = _receipt(tmp_path / "b")
    assert main(["promote", "--receipt", str(live), *args]) == 0
    ok = json.loads(capsys.readouterr().out)
    assert ok["promoted"] is True and ok["status"] == "active"


class _Relay(__import__("http.server").server.BaseHTTPRequestHandler):
    """A loopback proxy that is not the emulator: forwards to it but drops the emulator's scenario header,
    the way a real upstream ignores it. Non-streaming relay (the SSE body is buffered, then written)."""

    upstream = ""

    def _relay(self) -> None:
        import httpx

        from hermes_nb.emulator import SCENARIO_HEADER

        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        drop = {"host", "content-length", "connection", "accept-encoding", SCENARIO_HEADER.lower()}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
        resp = httpx.request(self.command, self.upstream + self.path, headers=headers, content=body, timeout=30)
        self.send_response(resp.status_code)
        self.send_header("content-type", resp.headers.get("content-type", "application/json"))
        self.send_header("content-length", str(len(resp.content)))
        self.end_headers()
        self.wfile.write(resp.content)

    do_GET = do_POST = _relay

    def log_message(self, *args: object) -> None:
        pass


def test_the_success_path_end_to_end_a_smoke_receipt_against_a_non_emulator_endpoint_promotes(
        tmp_path: Path, manifest: Path, runbook: Path) -> None:
    """The whole chain, no hand-made receipt: smoke (live target) -> receipt -> verify -> promote."""
    import threading
    from http.server import ThreadingHTTPServer

    from hermes_nb import verify_receipts
    from hermes_nb.emulator import serve_emulator

    with serve_emulator() as emu:
        handler = type("Relay", (_Relay,), {"upstream": emu.base_url})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        thread.start()
        try:
            endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1"
            result = run_smoke_on(endpoint=endpoint, out_dir=tmp_path / "live", only=["e2e_smoke"],
                               html=False)
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
    assert (result.verdict, result.target.kind, result.target.evidence) == ("passed", "live", None)
    assert verify_receipts(tmp_path / "live").ok
    receipt = result.runs[0].receipt_path
    assert receipt is not None
    promotion = promote(receipt, manifest=manifest, runbook=runbook)
    assert load_manifest(manifest).status == "active" and promotion.endpoint == endpoint
    assert promotion.receipt_sha256 in runbook.read_text()


def test_refuses_a_live_receipt_whose_own_record_names_an_emulator(tmp_path: Path, manifest: Path,
                                                                   runbook: Path) -> None:
    nb = nbformat.v4.new_notebook()
    meta = {"schema": "hermes-nb.receipt.v1", "notebook": "e2e_smoke", "run_id": "20260101T000000Z-abcdef",
            "verdict": "passed", "reason": "ok", "target_kind": "live", "endpoint": "http://127.0.0.1:1/v1",
            "model": "m", "summary": {"target": "emulator"}}
    files = write_receipt(nb, tmp_path / "r" / "2026-01-01" / "x", "e2e_smoke", meta, redactor=Redactor())
    with pytest.raises(PromotionRefused) as info:
        promote(files.notebook, manifest=manifest, runbook=runbook)
    assert any("records an emulator" in r for r in info.value.reasons)


def test_an_unwritable_runbook_promotes_nothing(tmp_path: Path, manifest: Path) -> None:
    from hermes_nb.core.errors import ArtifactError

    receipt = _receipt(tmp_path / "receipts")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(ArtifactError) as info:
        promote(receipt, manifest=manifest, runbook=blocker / "hermes-proxy-smoke.md")
    assert "nothing was promoted" in str(info.value) and info.value.exit_code == 2
    assert load_manifest(manifest).status == "experimental"
