"""The load receipt (``hermes-nb load --out``) and the load probe against the real proxy with the rig's upstream.

The receipt: the shipped ``load`` notebook executed by papermill with the measured report, its pictures as
``image/svg+xml`` outputs (what GitHub renders) and as images in the receipt's HTML, the report kept as a
verified artifact, indexed and verified like every receipt; the smoke still runs its three notebooks only.
"""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

from hermes_nb import LoadReport, run_load, verify_receipts
from hermes_nb.cli import main
from hermes_nb.core.facts import LOAD_NOTEBOOK
from hermes_nb.nbrun.load import load_with_receipt
from hermes_nb.proxy import rig
from hermes_nb.proxy.load.report import REPORT_FILE
from hermes_nb.receipts.verdict import find_verdict
from tests.helpers import S3_BUCKET, drive, needs_browser

HERMES_BIN = rig.find_hermes_bin()  # read at collection, before the autouse fixture clears HERMES_*
needs_hermes = pytest.mark.skipif(HERMES_BIN is None, reason=rig.INSTALL_HINT)
FAST = {"first_delta_s": 0.02, "token_interval_s": 0.001}
SVG = "{http://www.w3.org/2000/svg}"


def test_the_receipt_shows_the_report_and_its_pictures(hermes_emulator_factory, tmp_path: Path) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    run = load_with_receipt(emu.endpoint, out=tmp_path, concurrency="1,2", requests=4)
    doc = run.to_dict()
    assert run.report.verdict == "passed" and doc["receipt"]["verdict"] == "passed"
    receipt = Path(doc["receipt"]["path"])
    assert receipt.name == f"{LOAD_NOTEBOOK}.ipynb" and receipt.is_file()
    index = json.loads((tmp_path / "index.json").read_text())
    assert [e["notebook"] for e in index["receipts"]] == [LOAD_NOTEBOOK]
    assert verify_receipts(tmp_path).ok

    nb = nbformat.read(str(receipt), as_version=4)
    pictures = [o for c in nb.cells for o in c.get("outputs", []) if "image/svg+xml" in o.get("data", {})]
    assert len(pictures) == 3  # latency, throughput, errors: plain image outputs, no HTML (GitHub shows them)
    for out in pictures:
        assert set(out["data"]) == {"image/svg+xml", "text/plain"}
        assert ET.fromstring(out["data"]["image/svg+xml"]).get("class") == "hermes-load-plot"
    summary = find_verdict(nb)
    assert summary["job"] == LOAD_NOTEBOOK and summary["verdict"] == "passed"
    assert summary["details"]["load"]["levels"][1]["concurrency"] == 2
    kept = receipt.parent / "artifacts" / LOAD_NOTEBOOK / REPORT_FILE
    assert LoadReport.model_validate_json(kept.read_text()) == run.report  # the very report measured
    assert nb.metadata["receipt"]["artifacts"][REPORT_FILE] == summary["artifacts"][REPORT_FILE]

    html = receipt.with_suffix(".html").read_text()
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3
    for encoded in images:
        root = ET.fromstring(base64.b64decode(encoded))
        assert root.tag == f"{SVG}svg" and root.findall(f".//{SVG}text")
    assert "<script" not in html


def test_a_rate_limited_load_writes_a_blocked_receipt(hermes_emulator_factory, tmp_path: Path, capsys) -> None:
    emu = hermes_emulator_factory(scenario="rate-limited", retry_after=4)
    code = main(["load", "--endpoint", emu.endpoint, "--concurrency", "1,4", "--out", str(tmp_path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 3 and doc["exit_code"] == 3 and doc["receipt"]["verdict"] == "blocked"
    assert doc["rate_limited"] == {"concurrency": 1, "count": 1, "retry_after_s": [4.0]}
    nb = nbformat.read(doc["receipt"]["path"], as_version=4)
    assert "Retry-After: 4 s" in " ".join(find_verdict(nb)["errors"])
    assert main(["receipts", "verify", str(tmp_path)]) == 0


def test_the_receipt_can_go_to_shared_storage(hermes_emulator_factory, s3_env, capsys) -> None:
    emu = hermes_emulator_factory(scenario="paced", **FAST)
    url = f"s3://{S3_BUCKET}/load"
    assert main(["load", "--endpoint", emu.endpoint, "--concurrency", "1", "--requests", "2", "--out", url,
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["receipt"]["path"].startswith(f"{url}/") and doc["receipt"]["out_dir"] == url
    assert main(["receipts", "verify", url, "--json"]) == 0


def test_the_load_notebook_measures_by_itself_without_a_report(tmp_path: Path) -> None:
    """Opened in Jupyter (or run by papermill) with no report, it measures its own embedded emulator."""
    import papermill

    out = tmp_path / "out.ipynb"
    from hermes_nb.core.resources import notebook_path

    papermill.execute_notebook(str(notebook_path(LOAD_NOTEBOOK)), str(out), kernel_name="python3",
                               parameters={"concurrency": "1", "requests": 2, "output_length": 2},
                               progress_bar=False, cwd=str(tmp_path))
    summary = find_verdict(nbformat.read(str(out), as_version=4))
    assert summary["verdict"] == "passed" and summary["target"] == "emulator"
    assert summary["details"]["load"]["levels"][0]["sent"] == 2 and summary["artifacts"] == {}


@needs_browser
def test_the_receipt_html_shows_the_plots_in_a_browser(hermes_emulator_factory, tmp_path: Path) -> None:
    emu = hermes_emulator_factory(scenario="concurrency-limited", max_concurrent=2, first_delta_s=0.1,
                                  token_interval_s=0.001)
    run = load_with_receipt(emu.endpoint, out=tmp_path / "receipts", concurrency="1,2,8", requests=4)
    assert run.report.rate_limited is not None
    html = Path(run.to_dict()["receipt"]["path"]).with_suffix(".html")
    seen = drive({"mode": "load_receipt", "receipt": str(html), "screenshot": str(tmp_path / "load.png")}, tmp_path)
    assert len(seen["images"]) == 3
    for complete, width, height, alt in seen["images"]:
        assert complete and width >= 600 and height >= 200, (width, height, alt)  # decoded, at their own size
    assert [alt.split(" ")[0] for *_, alt in seen["images"]] == ["TTFT,", "throughput", "failed"]


# --------------------------------------------------------------------------- the real proxy


@pytest.mark.real_proxy
@needs_hermes
def test_the_proxy_added_latency_over_the_rigs_upstream() -> None:
    with rig.real_proxy("live", hermes_bin=HERMES_BIN, upstream_scenario="paced") as handle:
        report = run_load(handle.endpoint, concurrency="1,2", requests=4, direct=handle.upstream.endpoint)
        forwarded = [r for r in handle.upstream.requests if r.path == "/v1/chat/completions"]
    assert report.verdict == "passed" and [lv.succeeded for lv in report.levels] == [4, 4]
    assert [lv.succeeded for lv in report.direct_levels] == [4, 4]
    assert [a.concurrency for a in report.added] == [1, 2]
    assert all(a.ttft_ms["p50"] is not None and a.e2e_ms["p50"] is not None for a in report.added)
    assert len(forwarded) == 16  # 8 through the proxy, 8 direct
    assert all(lv.ttft_ms.min >= 100.0 for lv in report.levels + report.direct_levels)  # the upstream's first delta


@pytest.mark.real_proxy
@needs_hermes
def test_the_real_proxy_passes_429_and_retry_after_through() -> None:
    with rig.real_proxy("live", hermes_bin=HERMES_BIN, upstream_scenario="rate-limited") as handle:
        report = run_load(handle.endpoint, concurrency="1,4", requests=2)
    assert (report.verdict, report.reason) == ("blocked", "rate-limited")
    assert report.rate_limited is not None and report.rate_limited.retry_after_s == [2.0]
    assert [lv.concurrency for lv in report.levels] == [1]
