"""The CI face of the smoke: JUnit XML (valid against junit-10.xsd), the Markdown step summary, --blocked-exit."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import nbformat
import pytest
import xmlschema
from junitparser import Failure, JUnitXml, Skipped

from hermes_nb.cli import main
from hermes_nb.core.redaction import Redactor
from hermes_nb.nbrun.jobs import ci_report, smoke_exit_code, write_ci_outputs
from hermes_nb.receipts.ci import junit_text, summary_markdown, xml_safe
from tests.helpers import JUNIT_XSD, run_smoke_on

CANARY = "sk-canary-ci-0123456789abcdef0123"
PARAMS = 'endpoint: "Optional[str]" = None  # where\nmodel: str = "m"  # model'


def _verdict(verdict: str, reason: str, errors: list[str], details: dict) -> str:
    return ("from hermes_nb import kit\nfrom hermes_nb.receipts.verdict import verdict_summary\n"
            f"kit.record_verdict(verdict_summary('fixture', {verdict!r}, reason={reason!r}, errors={errors!r}, "
            f"details={details!r}, endpoint=endpoint, model=model))")


FIXTURES = {
    "ok": [_verdict("passed", "fine", [], {})],
    "locked": [_verdict("blocked", "locked", ["hermes-proxy: credentials locked"],
                        {"hint": "run `hermes auth status nous`"})],
    "drifted": ["print('\\x1b[31mred\\x1b[0m and a bell \\x07')",
                _verdict("failed", "drift", ["wire drift: routes[GET /].status: 404 → 200"],
                         {"drift": ["routes[GET /].status: 404 → 200"]})],
    "leaky": ["import os\nprint(os.environ['HERMES_NB_AUTH_TOKEN'])",
              _verdict("failed", f"boom {CANARY}", [f"token {CANARY}"], {})],
}


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory: pytest.TempPathFactory):
    templates = tmp_path_factory.mktemp("templates")
    for name, cells in FIXTURES.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(PARAMS)] + [nbformat.v4.new_code_cell(c) for c in cells]
        nb.cells[0].metadata["tags"] = ["parameters"]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, str(templates / f"{name}.ipynb"))
    out = tmp_path_factory.mktemp("receipts")
    mp = pytest.MonkeyPatch()
    mp.setenv("HERMES_NB_AUTH_TOKEN", CANARY)
    try:
        result = run_smoke_on(out, secrets=[CANARY], only=list(FIXTURES), templates=templates, timeout_s=20,
                              html=False)
    finally:
        mp.undo()
    return result, ci_report(result, redactor=Redactor([CANARY]))


def test_junit_is_valid_against_the_jenkins_schema_and_junitparser_reads_it(fixture_report, tmp_path: Path) -> None:
    result, report = fixture_report
    redactor = Redactor([CANARY])
    written = write_ci_outputs(report, redactor=redactor, junit_xml=str(tmp_path / "junit.xml"))
    path = Path(written["junit_xml"])
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))  # raises on any violation
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    assert suite.name == "hermes-nb smoke emulator"
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 2, 0, 1)
    cases = {c.name: c for c in suite}
    assert set(cases) == set(FIXTURES)
    assert all(c.classname == "emulator" and c.time > 0 for c in cases.values())
    assert cases["ok"].is_passed
    [skip] = cases["locked"].result
    assert isinstance(skip, Skipped) and "run `hermes auth status nous`" in skip.message
    [fail] = cases["drifted"].result
    assert isinstance(fail, Failure) and fail.type == "drift" and "drift" in fail.message
    assert "routes[GET /].status: 404 → 200" in fail.text
    props = {p.name: p.value for p in suite.properties()}
    assert props["run_id"] == result.run_id and props["verdict"] == "failed" and props["exit_code"] == "1"
    for run in result.runs:
        assert props[f"receipt:{run.name}"] == str(run.receipt_path)
        assert f"receipt: {run.receipt_path}" in cases[run.name].system_out
    assert CANARY not in path.read_text()
    import xml.etree.ElementTree as ET

    element = ET.parse(path).getroot().find("testsuite")
    assert element is not None and element.get("hostname") == socket.gethostname()  # always: host, start, id
    assert element.get("timestamp", "").startswith("20") and element.get("id") == result.run_id
    skipped = element.find("testcase[@name='locked']/skipped")
    assert skipped is not None and skipped.text == "hermes-proxy: credentials locked"  # the action once, in the
    assert "run `hermes auth status nous`" in skipped.get("message", "")  # message; the text: only other errors
    assert "cell_error" not in path.read_text()  # no internal status names


def test_summary_has_the_table_the_action_the_drift_and_no_canary(fixture_report, tmp_path: Path) -> None:
    _, report = fixture_report
    step = tmp_path / "step-summary.md"
    step.write_text("# earlier step\n")
    write_ci_outputs(report, redactor=Redactor([CANARY]), summary_md=str(tmp_path / "s.md"), step_summary=str(step))
    text = (tmp_path / "s.md").read_text()
    assert step.read_text().startswith("# earlier step\n") and step.read_text().endswith(text)  # appended
    assert "| notebook | verdict |" in text and "| locked | ⏸️ blocked | locked |" in text
    assert "**locked**: run `hermes auth status nous`" in text
    assert "routes[GET /].status: 404 → 200" in text
    assert "--blocked-exit 3" in text
    assert CANARY not in text and "token <redacted>" in text
    assert "cell_error" not in text and "(a cell raised)" in text  # what happened, in words


def test_a_secret_that_slips_past_redaction_refuses_the_write(tmp_path: Path) -> None:
    report = {"verdict": "failed", "notebooks": [{"name": "x", "verdict": "failed", "reason": "r",
                                                  "errors": ["e"], "receipt": "p"}], "target_kind": "emulator"}

    class Leaky(Redactor):  # a redactor that forgets to redact but still knows the secret
        def data(self, value):
            return value

    with pytest.raises(Exception, match="refusing to write"):
        write_ci_outputs({**report, "endpoint": CANARY}, redactor=Leaky([CANARY]), junit_xml=str(tmp_path / "j.xml"))
    assert not (tmp_path / "j.xml").exists()


def test_xml_safe_strips_ansi_and_forbidden_characters() -> None:
    assert xml_safe("\x1b[31mred\x1b[0m\x07 ok\n") == "red ok\n"
    text = junit_text({"target_kind": "rig", "notebooks": [
        {"name": "n", "verdict": "failed", "reason": "\x1b[1mbad\x1b[0m", "errors": ["\x00nul"]}]})
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(text)


@pytest.mark.parametrize(("verdict", "blocked_exit", "code"), [
    ("passed", 3, 0), ("failed", 0, 1), ("blocked", 3, 3), ("blocked", 0, 0), ("blocked", 1, 1)])
def test_blocked_exit_maps_only_blocked(verdict: str, blocked_exit: int, code: int) -> None:
    assert smoke_exit_code(verdict, blocked_exit) == code


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_blocked_exit_0_junit_and_github_step_summary(tmp_path: Path, capsys, monkeypatch) -> None:
    step = tmp_path / "gh-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code = main(["smoke", "--endpoint", f"http://127.0.0.1:{_closed_port()}/v1", "--only", "adapter_check",
                 "--out", str(tmp_path / "r"), "--no-html", "--junit-xml", str(tmp_path / "j.xml"),
                 "--blocked-exit", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "blocked" and out["exit_code"] == 0 and out["blocked_exit"] == 0
    assert out["junit_xml"] == str(tmp_path / "j.xml") and out["step_summary"] == str(step)
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(tmp_path / "j.xml"))
    [case] = list(next(iter(JUnitXml.fromfile(str(tmp_path / "j.xml")))))
    assert case.classname == "live" and isinstance(case.result[0], Skipped)
    assert "hermes proxy start" in case.result[0].message  # the operator action
    text = step.read_text()
    assert "blocked (exit 0)" in text and "`--blocked-exit 0`" in text and "does not fail the pipeline" in text


def test_cli_bad_blocked_exit_is_usage(capsys) -> None:
    assert main(["smoke", "--blocked-exit", "2", "--json"]) == 2
    assert "--blocked-exit" in json.loads(capsys.readouterr().out)["error"]


def test_summary_markdown_escapes_table_cells() -> None:
    text = summary_markdown({"verdict": "passed", "exit_code": 0, "blocked_exit": 3, "notebooks": [
        {"name": "a|b", "verdict": "passed", "reason": "x\ny", "receipt": "https://host/r.ipynb"}]})
    assert "| a\\|b | ✅ passed | x y |" in text and "[receipt](https://host/r.ipynb)" in text


def test_a_rig_that_cannot_start_still_gives_ci_a_blocked_report(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(tmp_path / "no-such-hermes"))
    assert main(["smoke", "--rig", "stale", "--junit-xml", str(tmp_path / "j.xml"), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "blocked" and "not an executable file" in out["error"]
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(tmp_path / "j.xml"))
    [case] = list(next(iter(JUnitXml.fromfile(str(tmp_path / "j.xml")))))
    assert case.name == "rig" and isinstance(case.result[0], Skipped)
    assert "not an executable file" in case.result[0].message
    text = (tmp_path / "j.xml").read_text()  # a rig that never started: still a host, a start time and an id
    assert f'hostname="{socket.gethostname()}"' in text and 'timestamp="20' in text and 'id=""' not in text
    assert main(["smoke", "--rig", "stale", "--summary-md", str(tmp_path / "s.md"), "--blocked-exit", "0"]) == 0
    assert "**rig**:" in (tmp_path / "s.md").read_text() and "blocked (exit 0)" in (tmp_path / "s.md").read_text()


def test_a_signal_before_any_notebook_started_still_gives_ci_every_notebook_cancelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM during a slow start (here: while the config resolves, after the kernels were launched) used to end in
    {"error": "interrupted"} with no JUnit, summary or receipts: now every requested notebook is a cancelled case."""
    import os
    import signal

    import hermes_nb.core.resolve as resolve
    from hermes_nb.core.facts import NOTEBOOKS
    from hermes_nb.nbrun.jobs import smoke

    real = resolve.resolve_runtime_config

    def slow_start(**kwargs: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)  # the CI runner cancels the job now, before the first "running" line
        return real(**kwargs)

    monkeypatch.setattr(resolve, "resolve_runtime_config", slow_start)
    lines: list[str] = []
    junit, summary = tmp_path / "j.xml", tmp_path / "s.md"
    outcome = smoke(out=tmp_path / "receipts", junit_xml=junit, summary_md=summary, environ={}, progress=lines.append)
    assert (outcome.verdict, outcome.exit_code) == ("cancelled", 143)
    assert outcome.error == "cancelled by SIGTERM before any notebook ran"
    assert not any(line.endswith(": running") for line in lines)
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(junit))
    cases = list(next(iter(JUnitXml.fromfile(str(junit)))))
    assert [c.name for c in cases] == list(NOTEBOOKS)
    assert all(c.result[0]._tag == "error" and c.result[0].type == "cancelled" for c in cases)
    text = summary.read_text()
    assert "### Cancelled" in text and all(f"**{name}**: cancelled by SIGTERM" in text for name in NOTEBOOKS)
