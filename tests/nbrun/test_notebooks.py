"""The committed notebooks: conventions, stored outputs for nbval, reproducibility, plain papermill CLI."""

from __future__ import annotations

import ast
import configparser
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from hermes_nb.core.facts import (
    GUIDES,
    LOAD_NOTEBOOK,
    NOTEBOOKS,
    SHIPPED_NOTEBOOKS,
    TEMPLATED_NOTEBOOKS,
    notebooks_dir,
    sanitize_file,
)
from hermes_nb.nbrun.templates import build
from hermes_nb.receipts.verdict import VERDICT_MIME, find_verdict
from tests.helpers import ROOT

#: the smoke's three and the load receipt's notebook (built from templates; the guide is checked on its own)
NAMES = TEMPLATED_NOTEBOOKS
#: the committed notebooks people open and nbval checks
NB_DIR = ROOT / "notebooks"
PARAM_RE = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*): (?P<type>[\w\[\]\"]+) = (?P<default>[^#]+?)  # (?P<help>.+)$")
SECRETISH = re.compile(r"(?i)token|secret|password|key|auth")


def _load(name: str) -> nbformat.NotebookNode:
    return nbformat.read(str(NB_DIR / f"{name}.ipynb"), as_version=4)


def test_the_three_notebooks_exist_and_match_the_runner() -> None:
    assert (*NOTEBOOKS, LOAD_NOTEBOOK) == NAMES and LOAD_NOTEBOOK not in NOTEBOOKS  # the smoke runs its three only
    assert sorted(p.stem for p in NB_DIR.glob("*.ipynb") if p.stem not in GUIDES) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_code_cell_has_stored_outputs(name: str) -> None:
    """A stripped notebook would pass nbval trivially; this makes it fail instead."""
    for cell in _load(name).cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, cell.source[:60]
        if "parameters" not in cell.metadata.get("tags", []):
            assert cell.outputs, f"{name}: no stored output for {cell.source[:60]!r}"
        for out in cell.outputs:
            assert out.output_type != "error", f"{name}: stored error output"
            assert not (out.output_type == "stream" and out.name == "stderr"), f"{name}: stderr {out.text[:200]}"


@pytest.mark.parametrize("name", NAMES)
def test_stored_outputs_come_from_a_passing_emulator_run(name: str) -> None:
    summary = find_verdict(_load(name))
    assert summary is not None and summary["verdict"] == "passed" and summary["target"] == "emulator"


@pytest.mark.parametrize("name", NAMES)
def test_one_parameters_cell_of_typed_literals_without_secrets(name: str) -> None:
    nb = _load(name)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    names = []
    for line in tagged[0].source.splitlines():
        match = PARAM_RE.match(line)
        assert match, f"{name}: not `name: type = default  # help`: {line!r}"
        ast.literal_eval(match["default"].strip())  # literals only
        assert "=" not in match["help"], "papermill cannot parse a help text with '='"
        assert not SECRETISH.search(match["name"]), f"secret-like parameter {match['name']!r}"
        names.append(match["name"])
    assert names[:2] == ["endpoint", "model"]


@pytest.mark.parametrize("name", NAMES)
def test_papermill_reads_every_parameter(name: str) -> None:
    import papermill

    params = papermill.inspect_notebook(str(NB_DIR / f"{name}.ipynb"))
    source = next(c for c in _load(name).cells if "parameters" in c.metadata.get("tags", [])).source
    assert set(params) == {line.split(":")[0] for line in source.splitlines()}
    assert all(p["help"] for p in params.values())


@pytest.mark.parametrize("name", NAMES)
def test_sources_are_the_generated_templates(name: str) -> None:
    """Reproducible: notebooks/ is `hermes-nb notebooks refresh` output (regenerate with `make notebooks`)."""
    committed = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in _load(name).cells]
    generated = [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in build(name).cells]
    assert committed == generated


@pytest.mark.parametrize("name", NAMES)
def test_title_narrative_and_verdict_cell_last(name: str) -> None:
    nb = _load(name)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert "HERMES_NB_AUTH_TOKEN" in nb.cells[0].source
    last = nb.cells[-1]
    # the verdict cell stops what the job started (job.finish); the load run stops its own emulators
    assert last.cell_type == "code" and ("job.finish(" in last.source or name == LOAD_NOTEBOOK)
    assert any(VERDICT_MIME in (o.get("metadata") or {}) for o in last.outputs)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" not in cell.metadata.get("tags", []):
            tree = ast.parse(cell.source)
            logic = (ast.For, ast.While, ast.If, ast.Try, ast.FunctionDef)
            assert not any(isinstance(n, logic) for n in ast.walk(tree)), \
                f"{name}: logic in a cell: {cell.source[:80]!r}"


@pytest.mark.parametrize("name", [*(f"{n}.ipynb" for n in NAMES), "nbval-sanitize.cfg"])
def test_the_package_ships_exactly_the_committed_notebooks(name: str) -> None:
    """One source: what the wheel ships (and the smoke executes) is byte-identical to notebooks/ (make notebooks)."""
    shipped = sanitize_file() if name.endswith(".cfg") else notebooks_dir() / name
    assert shipped.read_bytes() == (NB_DIR / name).read_bytes(), f"run `make notebooks`: {name} differs"


def test_sanitize_file_only_normalises_what_varies() -> None:
    parser = configparser.ConfigParser()
    parser.read(NB_DIR / "nbval-sanitize.cfg")
    assert parser.sections() == ["stream timelines", "digests", "ports", "run ids", "timestamps", "durations",
                                 "token rates", "kernel temp paths"]


def test_sanitize_rules_hide_timeline_pictures_and_digests_only() -> None:
    import re

    from hermes_nb.core.records import StreamTimeline
    from hermes_nb.views.htmlkit import timeline_svg

    parser = configparser.ConfigParser()
    parser.read(NB_DIR / "nbval-sanitize.cfg")
    rules = [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in ("stream timelines", "digests")]
    text = ("<p>a</p>" + timeline_svg(StreamTimeline(headers_s=0.01, deltas=(0.1, 0.5), last_byte_s=0.6, total_s=0.6))
            + "<p>b</p> " + "ab" * 32 + " " + "ab" * 31)
    for regex, replacement in rules:
        text = regex.sub(replacement, text)
    assert text == '<p>a</p><svg class="hermes-timeline"></svg><p>b</p> <sha256> ' + "ab" * 31


def test_plain_papermill_cli_runs_a_notebook_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [sys.executable, "-m", "papermill", str(NB_DIR / "adapter_check.ipynb"), str(out), "-k", "python3",
         "-p", "budget_s", "4.0", "--no-progress-bar", "--execution-timeout", "60", "--cwd", str(tmp_path)],
        capture_output=True, text=True, timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    nb = nbformat.read(str(out), as_version=4)
    summary = find_verdict(nb)
    assert summary is not None and summary["verdict"] == "passed"
    assert json.loads(json.dumps(nb.metadata.papermill["parameters"])) == {"budget_s": 4.0}


def test_refresh_regenerates_executes_and_strips_run_metadata(tmp_path: Path) -> None:
    from hermes_nb.nbrun.refresh import refresh_notebooks

    runs = refresh_notebooks(tmp_path, names=["adapter_check"], timeout_s=60)
    assert [r.verdict for r in runs] == ["passed"]
    nb = nbformat.read(str(tmp_path / "adapter_check.ipynb"), as_version=4)
    assert "papermill" not in nb.metadata
    assert all("papermill" not in c.metadata and "execution" not in c.metadata for c in nb.cells)
    assert [c.id for c in nb.cells] == [c.id for c in build("adapter_check").cells]
    assert all(c.outputs for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))
    # the notebook, and the sanitize rules its outputs were stored with (nbval in that directory needs them)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter_check.ipynb", "nbval-sanitize.cfg"]
    first = (tmp_path / "adapter_check.ipynb").read_bytes()
    outputs = json.dumps([c.outputs for c in nb.cells if c.cell_type == "code"])
    assert "127.0.0.1:<port>" in outputs and not re.search(r"127\.0\.0\.1:\d", outputs)  # stored sanitized
    refresh_notebooks(tmp_path, names=["adapter_check"], timeout_s=60)
    assert (tmp_path / "adapter_check.ipynb").read_bytes() == first


def test_sanitize_outputs_applies_the_rules_to_outputs_only_and_masks_digests() -> None:
    from hermes_nb.nbrun.refresh import sanitize_outputs, sanitize_rules

    rules = sanitize_rules(NB_DIR / "nbval-sanitize.cfg")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('http://127.0.0.1:1234/v1')")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="http://127.0.0.1:1234/v1 in 0.125 s\n"),
        nbformat.v4.new_output("display_data", data={"text/plain": "run 20261202T163553Z-468a2c"},
                               metadata={VERDICT_MIME: {"artifacts": {"runtime-final.txt": "ab" * 32},
                                                        "run_dir": "/tmp/hermes-nb-e2e-x/runs"}}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("port 127.0.0.1:8645"), cell]
    sanitize_outputs(nb, rules)
    assert nb.cells[0].source == "port 127.0.0.1:8645" and "1234" in nb.cells[1].source
    assert nb.cells[1].outputs[0].text == "http://127.0.0.1:<port>/v1 in <n.nnn> s\n"
    assert nb.cells[1].outputs[1].data["text/plain"] == "run <run-id>"
    meta = nb.cells[1].outputs[1].metadata[VERDICT_MIME]
    assert meta == {"artifacts": {"runtime-final.txt": "<sha256>"}, "run_dir": "<tmp-path>"}


def test_nbval_fails_when_a_stored_output_changes(tmp_path: Path) -> None:
    """The regression check can fail: the Makefile's nbval line on a copy with one edited stored output."""
    nb = _load("adapter_check")
    verdict_out = next(o for o in nb.cells[-1].outputs if VERDICT_MIME in (o.get("metadata") or {}))
    verdict_out.data["text/plain"] = verdict_out.data["text/plain"].replace("(ready)", "(locked)")
    nbformat.write(nb, str(tmp_path / "adapter_check.ipynb"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
         str(tmp_path / "adapter_check.ipynb"), "--nbval-current-env", "--nbval-sanitize-with",
         str(NB_DIR / "nbval-sanitize.cfg")],
        capture_output=True, text=True, timeout=110, cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "verdict: passed (locked)" in proc.stdout and "1 failed" in proc.stdout


def test_refresh_needs_a_positive_timeout(tmp_path: Path, capsys) -> None:
    from hermes_nb.cli import main

    assert main(["notebooks", "refresh", "--dir", str(tmp_path), "--cell-timeout-s", "0", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "--cell-timeout-s: must be > 0"
    assert list(tmp_path.iterdir()) == []


def _shape(nb) -> list:
    return [(c.cell_type, c["id"], c.source, c.metadata.get("tags")) for c in nb.cells]


def _outputs(nb) -> list:
    return [[(o.output_type, sorted(o.get("data", {}))) for o in c.outputs] for c in nb.cells if c.cell_type == "code"]


def test_the_guided_notebook_is_generated_shipped_and_only_calls_the_package(tmp_path: Path) -> None:
    assert GUIDES == ("probe_console",)
    committed = nbformat.read(str(NB_DIR / "probe_console.ipynb"), as_version=4)
    nb = build("probe_console")
    assert _shape(nb) == _shape(committed), "run `make notebooks`"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.metadata["tags"] == ["nbval-ignore-output"] and not c.outputs for c in code)
    sources = "\n".join(c.source for c in code)
    for needle in ("ProbeConsole(", "%load_ext hermes_nb", "%hermes_check", "%hermes_probe --compare",
                   "%%hermes_chat"):
        assert needle in sources
    # Run All leaves a working console: nothing closes it, and the last cell shows it again
    assert "close()" not in sources and "%unload_ext" not in sources and code[-1].source == "console"
    # stored executed: every code cell has its count and what it showed (nbval runs it, compares nothing)
    stored = [c for c in committed.cells if c.cell_type == "code"]
    assert [c.execution_count for c in stored] == list(range(1, len(stored) + 1))
    assert sum(bool(c.outputs) for c in stored) >= len(stored) - 2  # load_ext prints nothing
    # shipped (the same bytes as the repository's), and never run by the smoke
    assert (notebooks_dir() / "probe_console.ipynb").read_bytes() == (NB_DIR / "probe_console.ipynb").read_bytes()
    assert "probe_console" not in NOTEBOOKS and (*NAMES, "probe_console") == SHIPPED_NOTEBOOKS


def test_the_executed_guide_stores_normalised_outputs_that_read_well_unrun(tmp_path: Path) -> None:
    """What ``make notebooks`` stores: the same cells and kinds of output as committed; no port, model id or
    widget state of the session that ran it; the console as a static picture (no widget view, no page
    script); the sanitize placeholders visible in HTML (it showed "VBox(children=…" and "s / s / s")."""
    from hermes_nb.nbrun.refresh import refresh_notebooks

    refresh_notebooks(tmp_path, names=GUIDES)
    nb = nbformat.read(str(tmp_path / "probe_console.ipynb"), as_version=4)
    committed = nbformat.read(str(NB_DIR / "probe_console.ipynb"), as_version=4)
    assert _shape(nb) == _shape(committed) and _outputs(nb) == _outputs(committed)
    outputs = json.dumps([c.outputs for c in nb.cells if c.cell_type == "code"])
    assert "widgets" not in nb.metadata and "widget-view" not in outputs and "application/javascript" not in outputs
    assert "VBox(children" not in outputs
    console = nb.cells[[c.source for c in nb.cells].index(_console_cell(nb))].outputs
    assert [sorted(o.data) for o in console] == [["text/html", "text/plain"]]
    assert "static picture of the probe console" in console[0].data["text/html"]
    assert not re.search(r"127\.0\.0\.1:\d", outputs) and "127.0.0.1:&lt;port&gt;" in outputs
    html = [o.data["text/html"] for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if "text/html" in o.get("data", {})]
    assert not any(re.search(r"<(port|n\.nnn|n\.n|sha256|run-id|timestamp|tmp-path)>", h) for h in html)
    assert "&lt;n.nnn&gt; s" in outputs and "hermes-timeline" in outputs and not re.search(r"\d\.\d{3} s\b", outputs)


def _console_cell(nb) -> str:
    return next(c.source for c in nb.cells if c.cell_type == "code" and "ProbeConsole(" in c.source)


def test_notebooks_list_and_export_carry_the_guide_and_the_smoke_never_runs_it(tmp_path: Path, capsys) -> None:
    from hermes_nb.cli import main

    assert main(["notebooks", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["notebooks"]
    assert [(n["name"], n["kind"]) for n in listed] == (
        [(n, "smoke") for n in NOTEBOOKS] + [(LOAD_NOTEBOOK, "load"), ("probe_console", "guide")])
    assert main(["notebooks", "export", str(tmp_path), "--json"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{n}.ipynb" for n in NAMES] + ["probe_console.ipynb", "nbval-sanitize.cfg"])
    assert (tmp_path / "probe_console.ipynb").read_bytes() == (NB_DIR / "probe_console.ipynb").read_bytes()
    assert main(["smoke", "--only", "probe_console", "--json"]) == 2  # not a smoke job
