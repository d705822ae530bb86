"""receipts: redaction before writing, digests, sidecar, index, verify (tamper and secret detection)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from hermes_nb import verify_receipts
from hermes_nb.cli import main
from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.io import sha256_file
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import append_index, index_entry, load_index, render_readme
from hermes_nb.receipts.verify import verify_receipt
from hermes_nb.receipts.write import receipt_digest, redact_notebook, render_html, write_receipt
from hermes_nb.views.htmlkit import badge

CANARY = "sk-canary-receipts-0123456789"


def _nb(text: str = "hello") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1\nprint(x)\n# second line")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    cell.execution_count = 1
    nb.cells = [cell]
    nb.metadata["papermill"] = {"parameters": {"endpoint": None}}
    return nb


def _meta(**over) -> dict:
    meta = {"schema": "hermes-nb.receipt.v1", "notebook": "e2e_smoke", "run_id": "20260101T000000Z-abcdef",
            "verdict": "passed", "target_kind": "live", "endpoint": "http://127.0.0.1:8645/v1", "model": "m",
            "started_at": "2026-01-01T00:00:00.000Z", "duration_s": 1.0}
    meta.update(over)
    return meta


def _write(directory: Path, name: str = "e2e_smoke", text: str = "hello", redactor: Redactor | None = None,
           html: bool = True, artifacts: dict | None = None, **over):
    red = redactor or Redactor([CANARY])
    receipt_dir = directory / "2026-01-01" / "20260101T000000Z-abcdef"
    meta = _meta(notebook=name, **over)
    files = write_receipt(_nb(text), receipt_dir, name, meta, redactor=red,
                          page=html, artifacts=artifacts)
    append_index(directory, [index_entry(directory, files, meta)], redactor=red)
    return files


def test_redact_notebook_redacts_every_string_and_keeps_sources_intact() -> None:
    nb = _nb(f"token={CANARY}")
    nb.metadata["papermill"]["parameters"]["x"] = CANARY
    clean = redact_notebook(nb, Redactor([CANARY]))
    assert CANARY not in nbformat.writes(clean)
    assert clean.cells[0].source == "x = 1\nprint(x)\n# second line"


def test_write_receipt_writes_notebook_html_sidecar_with_digests(tmp_path: Path) -> None:
    files = _write(tmp_path)
    assert files.notebook.name == "e2e_smoke.ipynb" and files.html and files.html.read_text().startswith("<!DOCTYPE")
    assert "hello" in files.html.read_text() and f"<th>verdict</th><td>{badge('passed')}</td>" in files.html.read_text()
    nb = nbformat.read(str(files.notebook), as_version=4)
    assert nb.metadata.receipt["verdict"] == "passed"
    sidecar = json.loads(files.sidecar.read_text())
    assert sidecar["receipt_sha256"] == receipt_digest(nb.metadata.receipt)
    assert sidecar["files"]["e2e_smoke.ipynb"] == sha256_file(files.notebook)
    assert sidecar["files"]["e2e_smoke.html"] == sha256_file(files.html)


def test_canary_never_reaches_any_file(tmp_path: Path) -> None:
    art = tmp_path / "runtime.stdout.log"
    art.write_text(f"the key is {CANARY}\n")
    _write(tmp_path / "r", text=f"leaked {CANARY} and Authorization: Bearer {CANARY}",
           artifacts={"runtime.stdout.log": art}, endpoint=f"http://x/{CANARY}")
    produced = [p for p in (tmp_path / "r").rglob("*") if p.is_file()]
    assert len(produced) >= 6
    for path in produced:
        assert CANARY not in path.read_text(errors="replace"), path
    assert verify_receipts(tmp_path / "r", secrets=[CANARY]).ok


def test_artifact_copies_are_listed_and_digested(tmp_path: Path) -> None:
    art = tmp_path / "runtime-final.txt"
    art.write_text("summary\n")
    files = _write(tmp_path / "r", artifacts={"runtime-final.txt": art})
    copy = files.notebook.parent / "artifacts" / "e2e_smoke" / "runtime-final.txt"
    assert copy.read_text() == "summary\n"
    assert files.files["artifacts/e2e_smoke/runtime-final.txt"] == sha256_file(copy)


def test_artifact_names_must_be_plain(tmp_path: Path) -> None:
    art = tmp_path / "a.txt"
    art.write_text("x")
    with pytest.raises(ArtifactError):
        write_receipt(_nb(), tmp_path / "r", "n", _meta(), redactor=Redactor(), artifacts={"../a.txt": art})


def test_index_appends_and_readme_lists_newest_first(tmp_path: Path) -> None:
    _write(tmp_path, name="adapter_check")
    _write(tmp_path, name="e2e_smoke", verdict="failed")
    index = load_index(tmp_path)
    assert [e["notebook"] for e in index["receipts"]] == ["adapter_check", "e2e_smoke"]
    readme = (tmp_path / "README.md").read_text()
    assert readme.index("e2e_smoke") < readme.index("adapter_check")
    assert "[html](2026-01-01/20260101T000000Z-abcdef/e2e_smoke.html)" in readme
    assert render_readme(index) == readme


def test_verify_passes_on_untouched_receipts(tmp_path: Path) -> None:
    _write(tmp_path)
    report = verify_receipts(tmp_path)
    assert report.ok, report.problems
    assert report.files_scanned == 5 and report.receipts[0]["ok"]  # ipynb, html, sidecar, index, README


def test_verify_detects_a_changed_verdict_in_the_notebook(tmp_path: Path) -> None:
    files = _write(tmp_path)
    nb = nbformat.read(str(files.notebook), as_version=4)
    nb.metadata.receipt["verdict"] = "failed"
    nbformat.write(nb, str(files.notebook))
    problems = " ".join(verify_receipts(tmp_path).problems)
    assert "metadata.receipt digest does not match the sidecar" in problems
    assert "sha256 does not match the sidecar" in problems


def test_verify_detects_an_edited_html(tmp_path: Path) -> None:
    files = _write(tmp_path)
    assert files.html is not None
    files.html.write_text(files.html.read_text().replace("hello", "HELLO"))
    assert any("e2e_smoke.html: sha256" in p for p in verify_receipts(tmp_path).problems)


def test_verify_detects_a_rewritten_sidecar_via_the_index(tmp_path: Path) -> None:
    files = _write(tmp_path)
    sidecar = json.loads(files.sidecar.read_text())
    sidecar["receipt"]["verdict"] = "failed"
    sidecar["receipt_sha256"] = receipt_digest(sidecar["receipt"])
    files.sidecar.write_text(json.dumps(sidecar))
    problems = " ".join(verify_receipts(tmp_path).problems)
    assert "sidecar digest does not match the index" in problems


def test_verify_detects_a_secret_and_an_unindexed_receipt(tmp_path: Path) -> None:
    _write(tmp_path)
    stray = tmp_path / "2026-01-01" / "other"
    write_receipt(_nb(), stray, "adapter_check", _meta(notebook="adapter_check"), redactor=Redactor())
    (tmp_path / "notes.txt").write_text(f"oops {CANARY}")
    report = verify_receipts(tmp_path, secrets=[CANARY])
    assert not report.ok
    text = " ".join(report.problems)
    assert "notes.txt: secret found" in text and CANARY not in text
    assert "adapter_check.ipynb: receipt not in index.json" in text


def test_verify_flags_a_missing_file_and_a_bad_index(tmp_path: Path) -> None:
    files = _write(tmp_path)
    assert files.html is not None
    files.html.unlink()
    assert any("missing" in p for p in verify_receipts(tmp_path).problems)
    (tmp_path / "index.json").write_text("{not json")
    assert any("not valid JSON" in p for p in verify_receipts(tmp_path).problems)
    assert not verify_receipts(tmp_path / "nope").ok


def test_verify_receipt_alone_without_sidecar(tmp_path: Path) -> None:
    files = _write(tmp_path)
    files.sidecar.unlink()
    meta, problems = verify_receipt(files.notebook)
    assert meta is None and "sidecar not found" in problems[0]


def test_html_render_shows_markdown_code_outputs_and_errors() -> None:
    nb = _nb("out <b>")
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("# Title\n\nsome *text*"))
    err = nbformat.v4.new_code_cell("1/0")
    err.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="x",
                                          traceback=["\x1b[31mZeroDivisionError\x1b[0m: x"])]
    html_out = nbformat.v4.new_code_cell("show()")
    html_out.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table>t</table>",
                                                                      "text/plain": "<obj>"})]
    nb.cells += [err, html_out]
    nb.metadata["receipt"] = _meta()
    page = render_html(nb)
    assert "<h1>Title</h1>" in page and "<em>text</em>" in page
    assert "out &lt;b&gt;" in page and "x = 1" in page
    assert "ZeroDivisionError: x" in page and "\x1b" not in page
    assert "<table>t</table>" in page and "&lt;obj&gt;" not in page
    assert "<th>target_kind</th><td>live</td>" in page


def test_receipts_cli_verify_and_list(tmp_path: Path, capsys) -> None:
    _write(tmp_path)
    assert main(["receipts", "verify", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["receipts", "list", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["notebook"] for e in listed["receipts"]] == ["e2e_smoke"]
    (tmp_path / "leak.txt").write_text(CANARY)
    assert main(["receipts", "verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "leak.txt: secret found" in out and CANARY not in out
    assert main(["receipts", "verify", str(tmp_path / "nope")]) == 2
    assert main(["receipts"]) == 2


@pytest.mark.parametrize("key, value", [("target_kind", "live-ish"), ("endpoint", "http://elsewhere/v1"),
                                        ("notebook", "adapter_check"), ("model", "other"), ("run_id", "x"),
                                        ("sidecar", "2026-01-01/x/e2e_smoke.receipt.json")])
def test_verify_detects_an_index_field_that_disagrees_with_the_receipt(tmp_path: Path, key: str, value: str) -> None:
    _write(tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    index["receipts"][0][key] = value
    (tmp_path / "index.json").write_text(json.dumps(index))
    report = verify_receipts(tmp_path)
    assert not report.ok and not report.receipts[0]["ok"]
    assert any(key in p and repr(value) in p for p in report.problems), report.problems


def test_verify_detects_a_file_slipped_into_a_receipt_directory(tmp_path: Path) -> None:
    files = _write(tmp_path)
    extra = files.notebook.parent / "artifacts" / "e2e_smoke" / "runtime-extra.txt"
    extra.parent.mkdir(parents=True)
    extra.write_text("not part of the receipt")
    problems = verify_receipts(tmp_path).problems
    assert problems == [f"{extra}: not listed in any receipt sidecar"]


def test_the_index_lock_leaves_no_file_behind(tmp_path: Path) -> None:
    _write(tmp_path)
    _write(tmp_path, name="adapter_check")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["README.md", "index.json"]


def test_verify_of_a_directory_without_an_index_is_not_verified(tmp_path: Path) -> None:
    report = verify_receipts(tmp_path)
    assert not report.ok
    assert report.problems == [f"{tmp_path}: no index.json (not a receipts directory, or nothing was written)"]


def test_the_index_is_a_chain_removing_or_reordering_an_entry_shows(tmp_path: Path) -> None:
    import shutil

    for name in ("wire_format_spike", "adapter_check", "e2e_smoke"):
        files = _write(tmp_path / "r", name=name)
    index = load_index(tmp_path / "r")
    assert index["receipts"][0]["prev_sha256"] is None
    assert all(len(e["prev_sha256"]) == 64 for e in index["receipts"][1:])
    assert verify_receipts(tmp_path / "r").ok

    # drop the middle receipt entirely: its entry and its files
    shutil.copytree(tmp_path / "r", tmp_path / "dropped")
    dropped = load_index(tmp_path / "dropped")
    gone = dropped["receipts"].pop(1)
    (tmp_path / "dropped" / "index.json").write_text(json.dumps(dropped))
    for path in (tmp_path / "dropped").glob(f"*/*/{gone['notebook']}*"):
        path.unlink()
    problems = verify_receipts(tmp_path / "dropped").problems
    entry = files.notebook.relative_to(tmp_path / "r")
    assert problems == [f"{tmp_path / 'dropped' / 'index.json'}: entry 2 ({entry}):"
                        " chain broken (an earlier entry was changed, removed or reordered)"]

    # swap two entries
    swapped = load_index(tmp_path / "r")
    swapped["receipts"][0], swapped["receipts"][1] = swapped["receipts"][1], swapped["receipts"][0]
    (tmp_path / "r" / "index.json").write_text(json.dumps(swapped))
    assert sum("chain broken" in p for p in verify_receipts(tmp_path / "r").problems) == 3


@pytest.mark.parametrize(("kind", "version", "shown"), [
    ("emulator", None, "none: the embedded emulator"),
    ("live", None, "unknown"),
    ("live", "0.19.0", "0.19.0"),
])
def test_the_receipt_page_never_shows_a_bare_none_for_the_hermes_agent_version(kind: str, version: str | None,
                                                                                shown: str) -> None:
    nb = _nb("out")
    nb.metadata["receipt"] = {**_meta(), "target_kind": kind, "hermes_agent_version": version}
    assert f"<th>hermes_agent_version</th><td>{shown}</td>" in render_html(nb)


def test_verify_understands_a_matrix_directory(tmp_path: Path, capsys) -> None:
    """``matrix --out``: one receipts directory per version and matrix.json/.md beside them, no index at the top
    (it used to report every receipt as unindexed)."""
    for version in ("0.18.2", "0.19.0"):
        _write(tmp_path / version)
    (tmp_path / "matrix.json").write_text("{}\n")
    (tmp_path / "matrix.md").write_text("# matrix\n")
    report = verify_receipts(tmp_path)
    assert report.ok, report.problems
    assert [r["path"] for r in report.receipts] == [
        f"{v}/2026-01-01/20260101T000000Z-abcdef/e2e_smoke.ipynb" for v in ("0.18.2", "0.19.0")]
    assert report.files_scanned == 2 * 5 + 2
    assert main(["receipts", "verify", str(tmp_path)]) == 0
    capsys.readouterr()
    (tmp_path / "matrix.md").write_text(f"# matrix {CANARY}\n")  # beside the versions: scanned too
    (tmp_path / "0.19.0" / "2026-01-01" / "20260101T000000Z-abcdef" / "e2e_smoke.html").write_text("edited")
    (tmp_path / "stray").mkdir()
    (tmp_path / "stray" / "x.txt").write_text("x")
    problems = verify_receipts(tmp_path, secrets=[CANARY]).problems
    assert any(p.startswith(f"{tmp_path / 'matrix.md'}: secret found") for p in problems)
    assert any("e2e_smoke.html: sha256 does not match" in p for p in problems)
    assert f"{tmp_path / 'stray' / 'x.txt'}: in no receipts directory of the matrix" in problems
