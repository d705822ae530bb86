"""One proxy, four faces: the CLI, a job notebook run by papermill, the magic and the library give the same verdict
and send the same requests for check, probe and run, and state the same defaults (one spec per job).

The proxy under test answers ``/health`` at once and ``GET /v1/models`` late (the emulator's ``slow-first-byte``,
scaled down to a fraction of a second): within the default budget every face says ``ready``; with a budget shorter
than the wait every face says ``slow`` (never ``unreachable``: the proxy answered ``/health``).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import papermill
import pytest
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb import check, probe, run_mission
from hermes_nb.cli import main
from hermes_nb.core.facts import notebook_path
from hermes_nb.emulator import serve_emulator
from hermes_nb.nbrun import JOB_SPECS
from hermes_nb.proxy.check import CheckSpec
from hermes_nb.receipts.verdict import find_verdict

SLOW_MODELS_S = 0.6


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hermes_nb")
    yield shell
    shell.run_line_magic("unload_ext", "hermes_nb")


@pytest.fixture(scope="module")
def slow_models() -> Any:
    with serve_emulator(scenario="slow-first-byte", first_byte_s=SLOW_MODELS_S) as emu:
        yield emu


def _notebook(name: str, tmp_path: Path, **parameters: Any) -> dict[str, Any]:
    """The notebook's own verdict summary (a notebook that does not pass raises in its verdict cell)."""
    out = tmp_path / f"{name}.ipynb"
    try:
        papermill.execute_notebook(str(notebook_path(name)), str(out), parameters=parameters, kernel_name="python3",
                                   cwd=str(tmp_path), progress_bar=False, execution_timeout=60)
    except papermill.PapermillExecutionError:
        pass
    summary = find_verdict(json.loads(out.read_text()))
    assert summary is not None
    return summary


def _requests(emu: Any, path: str) -> list[tuple[str, Any]]:
    seen = [(r.method, r.json) for r in emu.requests if r.path.endswith(path)]
    emu.clear()
    return seen


@pytest.mark.parametrize(("budget_s", "state"), [(None, "ready"), (SLOW_MODELS_S / 3, "slow")])
def test_check_gives_one_state_from_every_face(slow_models: Any, ip: Any, tmp_path: Path, capsys: Any,
                                               budget_s: float | None, state: str) -> None:
    endpoint = slow_models.endpoint
    budget = [] if budget_s is None else ["--budget-s", str(budget_s)]
    main(["check", "--endpoint", endpoint, *budget, "--json"])
    cli = json.loads(capsys.readouterr().out)["state"]
    magic = ip.run_line_magic("hermes_check", " ".join(["--endpoint", endpoint, *budget])).state
    library = check(endpoint=endpoint, **({} if budget_s is None else {"budget_s": budget_s})).state
    notebook = _notebook("adapter_check", tmp_path, endpoint=endpoint,
                         **({} if budget_s is None else {"budget_s": budget_s}))["reason"]
    assert cli == magic == library == notebook == state


def test_the_budget_default_is_stated_once_for_every_face(ip: Any, capsys: Any) -> None:
    default = CheckSpec.model_fields["budget_s"].default
    main(["check", "--help"])
    assert f"(default: {default:g})" in " ".join(capsys.readouterr().out.split())
    assert f"(default: {default:g})" in " ".join(ip.find_line_magic("hermes_check").__doc__.split())
    cell = next(c for c in json.loads(notebook_path("adapter_check").read_text())["cells"]
                if "parameters" in c.get("metadata", {}).get("tags", []))
    values = {n.target.id: ast.literal_eval(n.value) for n in ast.parse("".join(cell["source"])).body}
    assert values["budget_s"] == default
    for name, spec in JOB_SPECS.items():  # every job notebook's parameters are its spec's notebook options
        cell = next(c for c in json.loads(notebook_path(name).read_text())["cells"]
                    if "parameters" in c.get("metadata", {}).get("tags", []))
        assert "".join(cell["source"]).startswith(spec.parameters_source().split("\n")[0])


def test_probe_and_run_send_the_same_requests_from_every_face(ip: Any, tmp_path: Path, capsys: Any) -> None:
    with serve_emulator() as emu:
        main(["probe", "--endpoint", emu.endpoint, "--json"])
        cli = (json.loads(capsys.readouterr().out)["state"], _requests(emu, "/chat/completions"))
        magic_report = ip.run_line_magic("hermes_probe", f"--endpoint {emu.endpoint}")
        magic = (magic_report.state, _requests(emu, "/chat/completions"))
        library = (probe(emu.endpoint).state, _requests(emu, "/chat/completions"))
        assert cli == magic == library and cli[0] == "live" and cli[1]
        assert list(magic_report.drift) == []

        main(["run", "--prompt", "Say hi.", "--endpoint", emu.endpoint, "--root", str(tmp_path), "--json"])
        cli_run = (json.loads(capsys.readouterr().out)["status"], _requests(emu, "/chat/completions"))
        lib = run_mission(prompt="Say hi.", endpoint=emu.endpoint, root=str(tmp_path), handle_signals=False)
        lib_run = (lib.status, _requests(emu, "/chat/completions"))
        summary = _notebook("e2e_smoke", tmp_path, prompt="Say hi.", endpoint=emu.endpoint, root=str(tmp_path))
        nb_run = (summary["verdict"], _requests(emu, "/chat/completions"))
        assert cli_run == lib_run == nb_run and cli_run[0] == "passed" and len(cli_run[1]) == 1
