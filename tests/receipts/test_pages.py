"""Receipt pages people would rather look at: stream timeline, digests, tables that fit, the run index.html."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from hermes_nb import verify_receipts
from hermes_nb.core.errors import SecretLeak
from hermes_nb.core.records import StreamTimeline
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import (
    append_index,
    index_entry,
    load_index,
    render_index_html,
    write_index_html,
)
from hermes_nb.receipts.write import render_html, write_receipt
from hermes_nb.views.htmlkit import badge

CANARY = "sk-canary-pages-0123456789"


def _receipt_nb(timeline: dict | None) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("result")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>" + "x" * 500
                                                                  + "</td></tr></table>", "text/plain": "t"})]
    nb.cells = [cell]
    nb.metadata["receipt"] = {"notebook": "e2e_smoke", "verdict": "passed",
                              "artifacts": {"runtime-final.txt": "ab" * 32},
                              "template": {"path": "e2e_smoke.ipynb", "sha256": "cd" * 32},
                              "summary": {"details": {"timeline": timeline}}}
    return nb


def test_receipt_page_shows_the_timeline_the_digests_and_keeps_wide_tables_in_their_box() -> None:
    marks = StreamTimeline(headers_s=0.01, first_delta_s=0.05, deltas=(0.05, 0.1, 0.9), last_byte_s=0.95,
                           total_s=0.95).to_dict()
    page = render_html(_receipt_nb(marks))
    assert "<h3>Stream timeline</h3>" in page and page.count('class="delta"') == 3 and 'class="gap"' in page
    assert f'<code class="digest">{"ab" * 32}</code>' in page and "cd" * 32 in page
    assert re.search(r"\.out table,table\.receipt\{display:block;overflow-x:auto;max-width:100%\}", page)
    assert "Stream timeline" not in render_html(_receipt_nb(None))  # nothing streamed: no picture


def _write_run(directory: Path, run_id: str, verdicts: dict[str, str], endpoint: str) -> None:
    red = Redactor([CANARY])
    entries = []
    for i, (name, verdict) in enumerate(verdicts.items()):
        meta = {"notebook": name, "run_id": run_id, "verdict": verdict, "target_kind": "emulator",
                "endpoint": endpoint, "model": "m", "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.5 + i}
        files = write_receipt(_receipt_nb(None), directory / "2026-01-01" / run_id, name, meta, redactor=red,
                              page=True)
        entries.append(index_entry(directory, files, meta))
    append_index(directory, entries, redactor=red)


def test_index_html_groups_each_run_newest_first_with_verdicts_durations_and_links(tmp_path: Path) -> None:
    _write_run(tmp_path, "20260101T000000Z-aaaaaa", {"adapter_check": "passed", "e2e_smoke": "passed"},
               "http://127.0.0.1:1/v1")
    _write_run(tmp_path, "20260101T000100Z-bbbbbb", {"adapter_check": "passed", "e2e_smoke": "blocked",
                                                     "wire_format_spike": "failed"}, f"http://{CANARY}@127.0.0.1:1/v1")
    path = write_index_html(tmp_path, redactor=Redactor([CANARY]))
    page = path.read_text()
    assert path == tmp_path / "index.html" and CANARY not in page
    runs = re.findall(r'<section class="run" id="([^"]+)"', page)
    assert runs == ["20260101T000100Z-bbbbbb", "20260101T000000Z-aaaaaa"]  # newest run first
    newest = page.split('<section class="run"')[1]
    assert f'<span class="v">{badge("failed")}</span> · run 20260101T000100Z-bbbbbb' in newest  # the worst verdict
    assert newest.count('<tr class="receipt">') == 3 and "3.500 s" in newest and "longest 3.500 s" in newest
    for link in re.findall(r'href="([^"]+)"', page):
        assert (tmp_path / link).is_file(), link  # every link resolves to a file of the receipt
    assert verify_receipts(tmp_path, secrets=[CANARY]).ok  # the page sits beside index.json; verify accepts it


def test_index_html_is_scanned_before_it_is_written(tmp_path: Path) -> None:
    index = {"receipts": [{"run_id": "r", "notebook": "n", "verdict": "passed", "endpoint": f"Bearer {CANARY}"}]}
    assert "Bearer" in render_index_html(index)
    (tmp_path / "index.json").write_text(__import__("json").dumps(index))
    with pytest.raises(SecretLeak):
        write_index_html(tmp_path)
    assert not (tmp_path / "index.html").exists()


def test_a_smoke_run_writes_receipts_with_timelines_and_the_index_page(default_smoke) -> None:
    doc, out = default_smoke.doc, default_smoke.out
    assert doc["verdict"] == "passed"
    receipts = {r["notebook"]: Path(r["path"]) for r in doc["receipts"]}
    pages = {name: path.with_suffix(".html").read_text() for name, path in receipts.items()}
    for name in ("e2e_smoke", "wire_format_spike"):
        assert "<h3>Stream timeline</h3>" in pages[name] and 'class="hermes-timeline"' in pages[name], name
    e2e = load_index(out)["receipts"]
    assert "recorded in the receipt" not in pages["e2e_smoke"]
    digest = nbformat.read(str(receipts["e2e_smoke"]), as_version=4).metadata.receipt["artifacts"]["runtime-final.txt"]
    assert f'<code class="digest">{digest}</code>' in pages["e2e_smoke"]
    index_page = (out / "index.html").read_text()
    assert index_page.count('<tr class="receipt">') == len(e2e) == 3
    assert f'id="{doc["run_id"]}"' in index_page and verify_receipts(out).ok


def test_index_html_carries_lab_s_xsrf_query_over_to_its_links_and_says_what_they_need_untrusted() -> None:
    """In JupyterLab's HTML viewer the links answered 403 "Blocking request from unknown origin".

    The page's base there is ``/files/<dir>/index.html?_xsrf=…`` (Lab's download URL) and the frame sends no
    Referer; the script moves the ``_xsrf`` query onto each relative link. On file:// or S3 there is none and
    the links stay as written (the browser test follows them in Lab, from file:// and in dark mode)."""
    page = render_index_html({"receipts": [{"run_id": "r", "notebook": "adapter_check", "verdict": "passed",
                                            "path": "d/r/adapter_check.ipynb", "sidecar": "d/r/a.receipt.json"}]})
    script = page.split("<script>")[1].split("</script>")[0]
    assert "searchParams.get('_xsrf')" in script and "if(!x)return;" in script  # nothing to do outside Lab
    assert "u.origin!==b.origin" in script  # only links to the same server get it
    assert '<a href="d/r/adapter_check.html">receipt</a>' in page  # as written, for file:// and S3
    assert "<noscript>" in page and "Trust HTML" in page.split("<noscript>")[1]
