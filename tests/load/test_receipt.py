"""The load receipt (``hermes-nb load --out``): the shipped ``load`` notebook executed by papermill on the report
and its raw samples, every figure recomputed from the samples kept, the pictures as ``image/svg+xml`` outputs and
as images in the receipt's HTML, indexed and verified like every receipt (shared storage is the receipts' own,
tested in tests/nbrun/test_ci_storage.py); and the load probe against the real
proxy with the rig's upstream (the proxy is the target, its release named)."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from hermes_nb import run_load, verify_receipts
from hermes_nb.cli import main
from hermes_nb.core.facts import LOAD_NOTEBOOK
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.emulator.scenarios import SCENARIO_HEADER
from hermes_nb.load import run as run_module
from hermes_nb.load.receipt import load, read
from hermes_nb.load.report import REPORT_FILE, SAMPLES_CSV, SAMPLES_JSONL
from hermes_nb.load.spec import LoadSpec
from hermes_nb.load.views import level_line
from hermes_nb.receipts.verdict import find_verdict
from hermes_nb.rig.executable import INSTALL_HINT, find_hermes_bin
from hermes_nb.rig.rig import real_proxy
from tests.helpers import drive, needs_browser
from tests.load.conftest import FAST, csv_samples

HERMES_BIN = find_hermes_bin()  # read at collection, before the autouse fixture clears HERMES_*
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason=INSTALL_HINT)
SVG = "{http://www.w3.org/2000/svg}"


def test_the_receipt_keeps_every_request_and_recomputes_the_report(hermes_emulator_factory, tmp_path: Path) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    run = load(LoadSpec.build(endpoint=emu.endpoint, concurrency="1,2", requests=4, out=str(tmp_path)))
    doc = run.to_dict()
    assert run.report.verdict == "passed" and doc["receipt"]["verdict"] == "passed" and run.exit_code == 0
    receipt = Path(doc["receipt"]["path"])
    assert receipt.name == f"{LOAD_NOTEBOOK}.ipynb" and verify_receipts(tmp_path).ok
    kept = receipt.parent / "artifacts" / LOAD_NOTEBOOK
    lines = (kept / SAMPLES_JSONL).read_text().splitlines()
    assert len(lines) == 8 == len(csv_samples((kept / SAMPLES_CSV).read_text()))  # one a request
    assert set(json.loads(lines[0])) >= {"start_s", "first_token_s", "first_answer_s", "last_token_s", "last_byte_s",
                                         "tokens", "status", "error", "gaps_ms"}
    assert read(kept / REPORT_FILE).model_dump() == run.report.model_dump()  # recomputed from the samples kept

    nb = nbformat.read(str(receipt), as_version=4)
    summary = find_verdict(nb)
    assert summary["verdict"] == "passed" and summary["target"] == "emulator"
    assert set(summary["artifacts"]) == {REPORT_FILE, SAMPLES_JSONL, SAMPLES_CSV}
    assert summary["details"]["requests"] == 8 and summary["details"]["measured_s"] == run.report.duration_s
    pictures = [o for c in nb.cells for o in c.get("outputs", []) if "image/svg+xml" in o.get("data", {})]
    assert len(pictures) == 5 and all(set(o["data"]) == {"image/svg+xml", "text/plain"} for o in pictures)
    html = receipt.with_suffix(".html").read_text()
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 5 and "<script" not in html
    assert all(ET.fromstring(base64.b64decode(i)).tag == f"{SVG}svg" for i in images)


def test_a_rate_limited_load_writes_a_blocked_receipt(hermes_emulator_factory, tmp_path: Path, capsys) -> None:
    emu = hermes_emulator_factory(scenario="rate-limited", retry_after=4)
    code = main(["load", "--endpoint", emu.endpoint, "--concurrency", "1,4", "--out", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["exit_code"] == 3 and doc["receipt"]["verdict"] == "blocked"
    assert doc["rate_limited"] == {"concurrency": 1, "count": 1, "retry_after_s": [4.0]}
    assert "Retry-After: 4 s" in " ".join(find_verdict(nbformat.read(doc["receipt"]["path"], as_version=4))["errors"])
    assert main(["receipts", "verify", str(tmp_path)]) == 0


def test_ctrl_c_of_the_cli_prints_and_keeps_what_was_measured(hermes_emulator_factory, tmp_path: Path, monkeypatch,
                                                              capsys) -> None:
    emu = hermes_emulator_factory(scenario="paced", first_delta_s=0.3, token_interval_s=0.0)

    def then_ctrl_c(level):  # the first level's line: then one Ctrl-C, during the second
        if level.concurrency == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return level_line(level)

    monkeypatch.setattr(run_module, "level_line", then_ctrl_c)
    out = tmp_path / "receipts"
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1,2", "--requests", "2", "--warmup-rounds",
                 "0", "--out", str(out)]) == 1
    stdout = capsys.readouterr().out
    assert "failed (interrupted)" in stdout and "receipt: failed (interrupted)" in stdout
    assert main(["receipts", "verify", str(out)]) == 0
    kept = json.loads(next(out.rglob(REPORT_FILE)).read_text())
    assert kept["interrupted"] is True and kept["levels"][0]["succeeded"] == 2


@needs_browser
def test_the_receipt_html_shows_the_plots_in_a_browser(hermes_emulator_factory, tmp_path: Path) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=2, first_delta_s=0.1,
                                  token_interval_s=0.001)
    run = load(LoadSpec.build(endpoint=emu.endpoint, concurrency="1,2,8", requests=4, out=str(tmp_path / "r")))
    assert run.report.rate_limited is not None
    html = Path(run.to_dict()["receipt"]["path"]).with_suffix(".html")
    seen = drive({"mode": "load_receipt", "receipt": str(html), "screenshot": str(tmp_path / "load.png")}, tmp_path)
    assert len(seen["images"]) == 5
    for complete, width, height, alt in seen["images"]:
        assert complete and width >= 250 and height >= 200, (width, height, alt)  # decoded, at their own size


@pytest.mark.real_proxy
@needs_hermes
def test_the_real_proxy_is_the_target_its_added_latency_and_429s() -> None:
    with real_proxy("live", hermes_bin=HERMES_BIN, upstream_scenario="paced") as handle:
        report = run_load(handle.endpoint, concurrency="2", requests=2, max_tokens=4, direct=handle.upstream.endpoint,
                          hermes_bin=str(handle.hermes_bin))
        upstream_429 = resolve_runtime_config(endpoint=handle.endpoint, environ={},
                                              overrides={"extra_headers": {SCENARIO_HEADER: "rate-limited"}})
        limited = run_load(upstream_429, concurrency="1,4", requests=2)  # the proxy forwards the scenario header
    assert (report.target.kind, report.verdict) == ("rig", "passed") and report.target.release == handle.hermes_version
    assert [lv.succeeded for lv in report.levels + report.direct_levels] == [2, 2]
    assert all(a.ttft_ms["p50"] is not None for a in report.added)
    assert all(lv.ttft_ms.min >= 100.0 for lv in report.levels + report.direct_levels)  # the upstream's first delta
    assert (limited.verdict, limited.reason, limited.rate_limited.retry_after_s) == ("blocked", "rate-limited", [2.0])
