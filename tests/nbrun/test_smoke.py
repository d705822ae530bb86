"""smoke: verdicts from our own record (timeouts, dead kernels, early exits), receipts, CLI exit codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from hermes_nb import verify_receipts
from hermes_nb.cli import main
from hermes_nb.core.facts import NOTEBOOKS
from hermes_nb.core.facts import worst_verdict as overall_verdict
from hermes_nb.core.io import new_run_id
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.emulator import serve_emulator
from hermes_nb.nbrun.smoke import KERNEL_NAME, KernelPool, decide_verdict
from hermes_nb.receipts.index import load_index
from hermes_nb.target import Target, identify
from tests.helpers import ROOT, run_smoke_on

CANARY = "sk-canary-smoke-0123456789abcdef"
PARAMS = ('endpoint: "Optional[str]" = None  # where\nmodel: str = "m"  # model', ["parameters"])


def _verdict_cell(verdict: str) -> tuple[str, None]:
    return (f"from hermes_nb import kit\nfrom hermes_nb.receipts.verdict import verdict_summary\n"
            f"kit.record_verdict(verdict_summary('fixture', {verdict!r}, "
            "reason='fixture', endpoint=endpoint, model=model))", None)


FIXTURES = {
    "ok": [PARAMS, ("print('hello')", None), _verdict_cell("passed")],
    "blocked": [PARAMS, _verdict_cell("blocked")],
    "failed": [PARAMS, _verdict_cell("failed")],
    "raises": [PARAMS, ("raise ValueError('boom')", None), _verdict_cell("passed")],
    "slow": [PARAMS, ("print('before the stall')", None), ("import time\ntime.sleep(60)", None),
             _verdict_cell("passed")],
    "dead": [PARAMS, ("print('before the crash')", None), ("import os\nos._exit(1)", None), _verdict_cell("passed")],
    "exit0": [PARAMS, ("raise SystemExit(0)", None), _verdict_cell("passed")],
    "leaky": [PARAMS, ("import os\nprint('token', os.environ['HERMES_NB_AUTH_TOKEN'])", None),
              _verdict_cell("passed")],
}


def _write_fixture(directory: Path, name: str, cells: list) -> None:
    nb = nbformat.v4.new_notebook()
    for src, tags in cells:
        cell = nbformat.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(directory / f"{name}.ipynb"))


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory: pytest.TempPathFactory):
    """All fixture notebooks in ONE concurrent run (each its own kernel); timeout 4 s per cell: the slow one's
    cell sleeps 60 s, every other cell takes well under a second (a kernel's start is not a cell)."""
    templates = tmp_path_factory.mktemp("templates")
    for name, cells in FIXTURES.items():
        _write_fixture(templates, name, cells)
    out = tmp_path_factory.mktemp("receipts")
    old = os.environ.get("HERMES_NB_AUTH_TOKEN")
    os.environ["HERMES_NB_AUTH_TOKEN"] = CANARY
    try:
        result = run_smoke_on(out, secrets=[CANARY], only=list(FIXTURES), templates=templates, timeout_s=4)
    finally:
        if old is None:
            os.environ.pop("HERMES_NB_AUTH_TOKEN", None)
        else:
            os.environ["HERMES_NB_AUTH_TOKEN"] = old
    return result, out


@pytest.mark.parametrize(
    "status, summary, expected",
    [
        ("completed", {"verdict": "passed", "reason": "ok"}, ("passed", "ok")),
        ("cell_error", {"verdict": "blocked", "reason": "auth"}, ("blocked", "auth")),
        ("cell_error", {"verdict": "failed", "reason": "drift"}, ("failed", "drift")),
        ("completed", None, ("failed", "no verdict recorded (the notebook stopped before its verdict cell)")),
        ("cell_error", None, ("failed", "no verdict recorded (the notebook stopped before its verdict cell)")),
        ("timeout", {"verdict": "passed", "reason": "ok"}, ("failed", "timeout: E")),
        ("dead_kernel", None, ("failed", "dead kernel: E")),
        ("kernel_error", None, ("failed", "kernel error: E")),
        ("interrupted", {"verdict": "passed", "reason": "ok"}, ("failed", "interrupted: E")),
        ("cell_error", {"verdict": "passed", "reason": "ok"},
         ("failed", "the verdict cell passed but the notebook ended with cell_error: E")),
        ("completed", {"verdict": "maybe"}, ("failed", "unknown verdict 'maybe'")),
    ],
)
def test_decide_verdict_trusts_our_record(status, summary, expected) -> None:
    assert decide_verdict(status, summary, "E") == expected


@pytest.mark.parametrize("verdicts, expected", [
    (["passed", "passed"], "passed"), (["passed", "blocked"], "blocked"),
    (["blocked", "failed"], "failed"), ([], "passed"),
])
def test_overall_verdict(verdicts, expected) -> None:
    assert overall_verdict(verdicts) == expected


def test_run_id_shape() -> None:
    import re

    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", new_run_id())


def test_kernel_pool_spec_is_this_interpreter() -> None:
    with KernelPool() as pool:
        spec = json.loads((pool.dir / "kernels" / KERNEL_NAME / "kernel.json").read_text())
        assert spec["argv"][0] == sys.executable
        assert spec["env"]["JUPYTER_PLATFORM_DIRS"] == "1"
        assert pool.specs.get_kernel_spec(KERNEL_NAME).argv[0] == sys.executable
        assert set(pool.specs.find_kernel_specs()) == {KERNEL_NAME}  # no user's python3 can be picked
    assert not pool.dir.exists()


def test_each_fixture_gets_the_truthful_verdict(fixture_run) -> None:
    result, _ = fixture_run
    got = {r.name: (r.verdict, r.status) for r in result.runs}
    assert got == {
        "ok": ("passed", "completed"),
        "blocked": ("blocked", "cell_error"),
        "failed": ("failed", "cell_error"),
        "raises": ("failed", "cell_error"),
        "slow": ("failed", "timeout"),
        "dead": ("failed", "dead_kernel"),
        "exit0": ("failed", "completed"),  # SystemExit(0): papermill sees no error; no verdict recorded
        "leaky": ("passed", "completed"),
    }
    assert result.verdict == "failed"
    # the exit code each run alone would give (cli.exit_code_for is what `hermes-nb smoke` returns)
    from hermes_nb.core.facts import exit_code_for

    codes = {r.name: exit_code_for(overall_verdict([r.verdict])) for r in result.runs}
    assert codes == {"ok": 0, "blocked": 3, "failed": 1, "raises": 1, "slow": 1, "dead": 1, "exit0": 1, "leaky": 0}
    raises = next(r for r in result.runs if r.name == "raises")
    assert "ValueError: boom" in raises.errors
    # the failing cell and its exception's name (papermill's injected parameters cell counts: index 2)
    cells = {r.name: (r.cell, r.ename) for r in result.runs if r.status == "cell_error"}
    assert cells == {"raises": (2, "ValueError"), "blocked": (2, "NotebookFailed"), "failed": (2, "NotebookFailed")}


def test_receipt_metadata_matches_the_verdict_even_where_papermill_misleads(fixture_run) -> None:
    result, _ = fixture_run
    for run in result.runs:
        nb = nbformat.read(str(run.receipt_path), as_version=4)
        receipt = nb.metadata.receipt
        assert receipt["verdict"] == run.verdict and receipt["status"] == run.status
        assert nb.metadata.papermill["exception"] is (run.verdict != "passed")
        for key in ("hermes_nb_version", "python", "kernel", "papermill_version", "nbclient_version",
                    "started_at", "finished_at", "duration_s", "template", "parameters_sha256", "environment",
                    "target_kind", "execution_timeout_s"):
            assert key in receipt, key
        assert receipt["kernel"]["name"] == KERNEL_NAME and len(receipt["template"]["sha256"]) == 64
    slow = next(r for r in result.runs if r.name == "slow")
    recorded = nbformat.read(str(slow.receipt_path), as_version=4).metadata.receipt["papermill_exception_recorded"]
    assert recorded is not True  # papermill itself did not flag the timeout; our verdict did
    # papermill writes nothing after a timeout or a dead kernel: the receipt still shows the outputs so far
    for name, line in (("slow", "before the stall"), ("dead", "before the crash")):
        run = next(r for r in result.runs if r.name == name)
        cell = next(c for c in nbformat.read(str(run.receipt_path), as_version=4).cells if line in c.source)
        assert [o.get("text") for o in cell.outputs] == [line + "\n"], name


def test_receipts_verify_index_and_no_canary_anywhere(fixture_run) -> None:
    result, out = fixture_run
    assert verify_receipts(out, secrets=[CANARY]).ok
    assert len(load_index(out)["receipts"]) == len(FIXTURES)
    leaky = next(r for r in result.runs if r.name == "leaky")
    assert "<redacted>" in leaky.receipt_path.read_text()
    for path in out.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path
    dated = list(out.glob("*/*/ok.ipynb"))
    assert len(dated) == 1 and dated[0].with_suffix(".html").is_file()


def test_unknown_notebook_and_bad_timeout_are_usage_errors(tmp_path: Path) -> None:
    from hermes_nb import UsageError

    with pytest.raises(UsageError):
        run_smoke_on(tmp_path, only=["nope"])
    with pytest.raises(UsageError):
        run_smoke_on(tmp_path, timeout_s=0)


@pytest.mark.parametrize("argv", [
    ["smoke", "--timeout", "0"], ["smoke", "--endpoint", "ftp://x"], ["smoke", "--only", "nope"],
    ["smoke", "--endpoint", "http://127.0.0.1:1/v1", "--rig", "live"], ["smoke", "--model", " "],
])
def test_cli_usage_errors_exit_2(argv, capsys) -> None:
    assert main([*argv, "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == 2


#: read at collection, before the autouse fixture clears HERMES_* (HERMES_NB_HERMES_BIN included)
HERMES_BIN = __import__("hermes_nb.rig.executable", fromlist=["find_hermes_bin"]).find_hermes_bin()


@pytest.mark.real_proxy
@pytest.mark.skipif(HERMES_BIN is None, reason="no hermes: run `make rig-venv`")
def test_cli_rig_stale_is_blocked_exit_3_with_the_hermes_version(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_HERMES_BIN", str(HERMES_BIN))
    code = main(["smoke", "--rig", "stale", "--only", "adapter_check", "--only", "e2e_smoke",
                 "--out", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["verdict"] == "blocked" and out["target_kind"] == "rig"
    verdicts = {r["notebook"]: r["verdict"] for r in out["receipts"]}
    assert verdicts == {"adapter_check": "blocked", "e2e_smoke": "blocked"}
    for r in out["receipts"]:
        receipt = nbformat.read(r["path"], as_version=4).metadata.receipt
        assert receipt["target_kind"] == "rig" and receipt["hermes_agent_version"]
    assert verify_receipts(tmp_path).ok


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_unreachable_live_endpoint_is_blocked_exit_3(tmp_path: Path, capsys) -> None:
    code = main(["smoke", "--endpoint", f"http://127.0.0.1:{_closed_port()}/v1", "--only", "adapter_check",
                 "--only", "adapter_check", "--out", str(tmp_path), "--no-html", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["verdict"] == "blocked" and out["target_kind"] == "live"
    assert len(out["receipts"]) == 1  # a repeated --only runs once
    assert out["receipts"][0]["notebook"] == "adapter_check" and out["receipts"][0]["verdict"] == "blocked"
    receipt = nbformat.read(out["receipts"][0]["path"], as_version=4).metadata.receipt
    assert receipt["target_kind"] == "live" and receipt["reason"] == "unreachable"


def test_make_smoke_end_to_end_three_green_receipts_canary_clean(default_smoke) -> None:
    """The README's main command, as a subprocess: three notebooks, receipts verify, the canary nowhere."""
    out, receipts_dir = default_smoke.doc, default_smoke.out
    env = {**os.environ, "HERMES_NB_AUTH_TOKEN": default_smoke.canary}
    assert out["verdict"] == "passed"
    assert [r["notebook"] for r in out["receipts"]] == list(NOTEBOOKS)
    assert all(r["verdict"] == "passed" for r in out["receipts"])
    receipts = [nbformat.read(r["path"], as_version=4).metadata.receipt for r in out["receipts"]]
    for receipt in receipts:  # one target, established once by the runner and handed to each notebook
        assert receipt["target_kind"] == "emulator" and receipt["summary"]["target"] == "emulator"
        assert receipt["parameters"]["target"]["endpoint"] == receipt["endpoint"]
    assert len({receipt["endpoint"] for receipt in receipts}) == 1
    e2e = nbformat.read(next(r["path"] for r in out["receipts"] if r["notebook"] == "e2e_smoke"), as_version=4)
    kept = {"runtime-result.yaml", "runtime.stdout.log", "runtime-final.txt", "prompt.md", "events.ndjson",
            "request.json"}
    assert set(e2e.metadata.receipt["artifacts"]) == kept
    copies = Path(out["receipts"][2]["path"]).parent / "artifacts" / "e2e_smoke"
    assert {p.name for p in copies.iterdir()} == kept
    request = json.loads((copies / "request.json").read_text())  # the request sent, secrets masked
    assert request["method"] == "POST" and request["url"].endswith("/v1/chat/completions")
    assert request["headers"]["authorization"] == "Bearer <redacted>" and request["body"]["stream"] is True
    produced = [p for p in receipts_dir.rglob("*") if p.is_file()]
    assert len(produced) >= 14
    for path in produced:
        assert default_smoke.canary not in path.read_text(errors="replace"), path
    verify = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "receipts", "verify", str(receipts_dir)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert verify.returncode == 0, verify.stdout
    assert "3 receipts" in verify.stdout


def _emulator_template(directory: Path, params: str, name: str = "t") -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = directory / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_bad_config_after_the_kernels_launched_leaves_no_kernel_and_no_directory(tmp_path: Path, monkeypatch,
                                                                                   capsys) -> None:
    """The kernels launch before the config resolves (they boot meanwhile): a bad HERMES_NB_ENDPOINT is still
    a usage error, and the kernels and their working directory are gone with it."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("HERMES_NB_ENDPOINT", "ftp://nowhere")
    launched: list = []
    real = KernelPool.launch

    def launch(self, cwds):
        launched.extend(real(self, cwds))
        return launched

    monkeypatch.setattr(KernelPool, "launch", launch)
    assert main(["smoke", "--out", str(tmp_path / "out"), "--json"]) == 2
    assert "ftp://nowhere" in json.loads(capsys.readouterr().out)["error"]
    assert len(launched) == 3 and not any(km.has_kernel for km in launched)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_kernel_that_cannot_start_is_a_failed_verdict_not_a_crash(tmp_path: Path) -> None:
    from hermes_nb.nbrun.smoke import NotebookRun, execute_notebook

    _write_fixture(tmp_path, "ok", FIXTURES["ok"])
    run = NotebookRun(name="ok", template=tmp_path / "ok.ipynb", parameters={})
    with KernelPool(python=str(tmp_path / "no-such-python")) as pool:
        execute_notebook(run, pool, timeout_s=5, cwd=tmp_path)
    assert (run.status, run.verdict) == ("kernel_error", "failed")
    assert run.reason.startswith("kernel error: FileNotFoundError") and run.nb is None


def test_artifacts_changed_after_the_run_fail_the_verdict(tmp_path: Path) -> None:
    from hermes_nb.core.io import sha256_file
    from hermes_nb.nbrun.smoke import NotebookRun
    from hermes_nb.nbrun.smoke import artifact_sources as _artifact_sources

    (tmp_path / "runtime-final.txt").write_text("final")
    (tmp_path / "runtime.stdout.log").write_text("text")
    digests = {"runtime-final.txt": sha256_file(tmp_path / "runtime-final.txt"),
               "runtime.stdout.log": sha256_file(tmp_path / "runtime.stdout.log")}
    run = NotebookRun(name="e2e_smoke", template=tmp_path / "t.ipynb", parameters={}, verdict="passed",
                      summary={"run_dir": str(tmp_path), "artifacts": digests})
    assert set(_artifact_sources(run)) == set(digests) and run.verdict == "passed"
    (tmp_path / "runtime.stdout.log").write_text("edited")
    assert set(_artifact_sources(run)) == {"runtime-final.txt"}
    assert run.verdict == "failed" and "runtime.stdout.log changed" in run.reason


# --------------------------------------------------------------------------- target kind: an emulator is never "live"

def _identify(endpoint: str, **kw: Any) -> Target:
    return identify(resolve_runtime_config(environ={}, endpoint=endpoint), ask_emulator=True, **kw)


@pytest.mark.parametrize("profile", ["hermes-agent", "seed", "upstream"])
def test_the_emulator_is_told_on_every_profile(profile: str) -> None:
    with serve_emulator(profile=profile) as emu:
        target = _identify(emu.endpoint)
        assert target.kind == "emulator" and "unknown_scenario" in (target.evidence or "")
        assert [r.path for r in emu.requests] == ["/health", "/v1/models"]


def test_a_real_upstream_is_live_and_nothing_listening_is_not_the_emulator() -> None:
    import httpx

    from hermes_nb.emulator import SCENARIO_HEADER
    from hermes_nb.target import PROBE_SCENARIO

    seen: list[httpx.Request] = []

    def upstream(request: httpx.Request) -> httpx.Response:  # a real proxy ignores the header
        seen.append(request)
        if request.url.path == "/health":
            return httpx.Response(200, json={"status": "ok", "upstream": "Nous Portal"})
        return httpx.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})

    target = _identify("http://127.0.0.1:8645/v1", transport=httpx.MockTransport(upstream))
    assert (target.kind, target.evidence, target.provider) == ("live", None, "nous")
    assert seen[1].headers[SCENARIO_HEADER] == PROBE_SCENARIO and seen[1].url.path == "/v1/models"
    assert _identify(f"http://127.0.0.1:{_closed_port()}/v1").kind == "live"  # not an emulator: unreachable


def test_a_target_hermes_nb_started_keeps_its_kind() -> None:
    with serve_emulator() as emu:
        config = resolve_runtime_config(environ={}, endpoint=emu.endpoint)
        rig = identify(config, kind="rig", release="0.19.0", release_source="rig: /x/hermes")
        assert (rig.kind, rig.release) == ("rig", "0.19.0") and [r.path for r in emu.requests] == ["/health"]


def test_cli_endpoint_at_an_emulator_gives_emulator_receipts_the_gate_refuses(tmp_path: Path, capsys) -> None:
    from hermes_nb.core.manifest import manifest_template, save_manifest
    from hermes_nb.receipts.verify import PromotionRefused, promote

    with serve_emulator() as emu:
        code = main(["smoke", "--endpoint", emu.endpoint, "--only", "e2e_smoke", "--out", str(tmp_path / "r"),
                     "--no-html", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "passed" and out["target_kind"] == "emulator" and out["target_evidence"]
    receipt_path = Path(out["receipts"][0]["path"])
    receipt = nbformat.read(str(receipt_path), as_version=4).metadata.receipt
    assert receipt["target_kind"] == "emulator" and "unknown_scenario" in receipt["target_evidence"]
    assert receipt["hermes_agent_version"] == "unknown"  # the local hermes says nothing about an emulator
    assert load_index(tmp_path / "r")["receipts"][0]["target_kind"] == "emulator"
    manifest = tmp_path / "hermes-proxy.yaml"
    save_manifest(manifest_template(), manifest)
    with pytest.raises(PromotionRefused) as info:
        promote(receipt_path, manifest=manifest, runbook=tmp_path / "runbook.md")
    assert any("an emulator receipt" in r for r in info.value.reasons)


def test_cli_failing_endpoint_exits_1_with_a_verified_failed_receipt(tmp_path: Path, capsys) -> None:

    with serve_emulator(scenario="server-error") as emu:
        code = main(["smoke", "--endpoint", emu.endpoint, "--only", "adapter_check", "--out", str(tmp_path),
                     "--no-html", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["verdict"] == "failed"
    assert out["receipts"][0]["verdict"] == "failed" and out["receipts"][0]["status"] == "cell_error"
    receipt = nbformat.read(out["receipts"][0]["path"], as_version=4).metadata.receipt
    assert receipt["verdict"] == "failed" and any("HTTP 500" in e for e in receipt["errors"])
    assert verify_receipts(tmp_path).ok


def test_kernels_ignore_the_users_ipython_profile_and_keep_no_history(tmp_path: Path, monkeypatch) -> None:
    """A startup script in the user's IPython profile must not change what a receipt's notebook does."""
    from hermes_nb.nbrun.smoke import NotebookRun, execute_notebook

    user_dir = tmp_path / "user-ipython"
    (user_dir / "profile_default" / "startup").mkdir(parents=True)
    (user_dir / "profile_default" / "startup" / "00-leak.py").write_text("LEAKED = True\n")
    monkeypatch.setenv("IPYTHONDIR", str(user_dir))
    _write_fixture(tmp_path, "probe", [PARAMS, (
        "import os\nprint('LEAKED' in globals(), get_ipython().history_manager.enabled, "
        "os.environ['IPYTHONDIR'] == " + repr(str(user_dir)) + ")", None)])
    run = NotebookRun(name="probe", template=tmp_path / "probe.ipynb", parameters={})
    with KernelPool() as pool:
        execute_notebook(run, pool, timeout_s=30, cwd=tmp_path)
    assert run.status == "completed", run.errors
    out = next(c for c in run.nb.cells if "LEAKED" in c.source).outputs
    assert [o.get("text") for o in out] == ["False False False\n"]
    assert sorted(p.name for p in user_dir.rglob("*")) == ["00-leak.py", "profile_default", "startup"]


@pytest.mark.real_proxy
@pytest.mark.skipif(HERMES_BIN is None, reason="no hermes: run `make rig-venv`")
def test_the_real_proxy_in_front_of_the_emulator_is_the_rig_not_a_live_proxy(shared_rig) -> None:
    """The real proxy forwards the scenario header to its upstream: behind --endpoint, it is the rig (the proxy is
    the target, its upstream the emulator), never a live proxy the promotion gate would accept."""
    target = _identify(shared_rig("0.19", "live").endpoint)
    assert target.kind == "rig" and "upstream profile" in (target.evidence or "")


def test_an_unwritable_out_is_a_usage_error_before_any_notebook_runs(tmp_path: Path, capsys) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["smoke", "--out", str(a_file), "--only", "adapter_check", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == 2 and out["error"].startswith(f"receipts directory {a_file}: not a writable directory")


def test_a_receipt_that_cannot_be_written_fails_that_notebook_not_the_process(tmp_path: Path, monkeypatch) -> None:
    import hermes_nb.nbrun.smoke as smoke

    templates = tmp_path / "templates"
    templates.mkdir()
    _write_fixture(templates, "ok", FIXTURES["ok"])

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(smoke, "write_receipt", disk_full)
    result = run_smoke_on(tmp_path / "out", only=["ok"], templates=templates, timeout_s=30)
    assert result.verdict == "failed" and result.runs[0].receipt_path is None
    assert result.runs[0].reason == "receipt not written: [Errno 28] No space left on device"
    assert load_index(tmp_path / "out")["receipts"] == []


def test_ctrl_c_kills_the_kernels_and_still_writes_receipts_and_index(tmp_path: Path) -> None:
    """SIGINT while a cell runs: kernels killed at once, each receipt ``cancelled`` (not failed), index consistent,
    and the result says which signal (run_smoke returns; it does not re-raise)."""
    import signal
    import time

    marker = tmp_path / "cell-started"
    templates = tmp_path / "templates"
    templates.mkdir()
    _write_fixture(templates, "block", [PARAMS, (f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(300)",
                                                 None), _verdict_cell("passed")])
    out = tmp_path / "out"
    script = ("import sys\nfrom pathlib import Path\nfrom tests.helpers import run_smoke_on\n"
              f"result = run_smoke_on(Path({str(out)!r}), only=['block'], "
              f"templates=Path({str(templates)!r}), timeout_s=280)\n"
              "sys.exit(130 if (result.verdict, result.cancelled_by) == ('cancelled', 'SIGINT') else 0)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():  # poll with a deadline: the cell is running
            assert proc.poll() is None and time.monotonic() < deadline, \
                proc.stderr.read() if proc.poll() else "no start"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    entries = load_index(out)["receipts"]
    assert [(e["notebook"], e["verdict"]) for e in entries] == [("block", "cancelled")]
    receipt = nbformat.read(str(out / entries[0]["path"]), as_version=4).metadata.receipt
    assert receipt["status"] == "interrupted" and receipt["reason"] == "cancelled by SIGINT while it ran"
    assert verify_receipts(out).ok


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc: the kernels and anything they started)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (the container's init may be slow to reap it)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the kernel processes")
def test_sigterm_mid_smoke_leaves_junit_summary_receipts_and_nothing_behind(tmp_path: Path) -> None:
    """A CI runner cancels the job (SIGTERM) while notebooks wait on a stalled proxy: exit 143; the finished
    receipt is kept and every receipt indexed (the stopped ones ``cancelled``, not failed); the JUnit file and
    the summary name the cancelled notebooks; nothing is left in TMPDIR and no kernel process survives."""
    import signal
    import time


    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out, junit, summary = tmp_path / "receipts", tmp_path / "junit.xml", tmp_path / "summary.md"
    with serve_emulator(scenario="stall") as emu:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_", "GITHUB_"))}
        env["TMPDIR"] = str(tmp)
        proc = subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "smoke", "--endpoint", emu.endpoint,
                                 "--out", str(out), "--junit-xml", str(junit), "--summary-md", str(summary)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 90
            while not (any(r.path.endswith("/chat/completions") for r in emu.requests)
                       and list(out.glob("*/*/wire_format_spike.ipynb"))):  # mid-run: a chat stalls, one receipt
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
                time.sleep(0.05)  # polling the emulator's log and the receipts dir, bounded by a deadline
            kernels = _descendants(proc.pid)
            assert kernels, "no kernel processes found"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 143, err[-3000:]
    assert "Traceback" not in err
    verdicts = {e["notebook"]: e["verdict"] for e in load_index(out)["receipts"]}
    # the spike finished first (a stalled upstream is not judged: it stops sending after the first forwarded
    # request the upstream did not finish in 5 s): its receipt is kept as it was; the check waits up to 30 s
    assert verdicts == {"wire_format_spike": "passed", "adapter_check": "cancelled", "e2e_smoke": "cancelled"}
    assert verify_receipts(out).ok
    from junitparser import Error, JUnitXml

    [suite] = list(JUnitXml.fromfile(str(junit)))
    cases = {c.name: c for c in suite}
    assert (suite.errors, suite.failures) == (2, 0)
    for name in ("adapter_check", "e2e_smoke"):
        [error] = cases[name].result
        assert isinstance(error, Error) and error.type == "cancelled" and "SIGTERM" in error.message
    text = summary.read_text()
    assert "cancelled (exit 143)" in text and "**adapter_check**: cancelled by SIGTERM" in text
    assert "**e2e_smoke**: cancelled by SIGTERM" in text
    assert list(tmp.iterdir()) == []
    assert [pid for pid in kernels if _alive(pid)] == []


def test_a_cell_timeout_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """The e2e notebook's run works in a sandbox copy; a cell timeout kills its kernel mid-run. The kernel's
    temporary files live in the kernel pool's own directory, removed with it: TMPDIR stays empty."""

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serve_emulator(scenario="stall") as emu:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_", "GITHUB_"))}
        env["TMPDIR"] = str(tmp)
        proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "smoke", "--endpoint", emu.endpoint,
                               "--only", "e2e_smoke", "--cell-timeout-s", "2", "--no-html", "--out",
                               str(tmp_path / "r"), "--json"], env=env, capture_output=True, text=True, timeout=120)
    doc = json.loads(proc.stdout)
    assert (proc.returncode, doc["verdict"]) == (1, "failed"), proc.stderr[-2000:]
    assert doc["receipts"][0]["status"] == "timeout"
    assert list(tmp.iterdir()) == []


def test_the_environment_digest_lists_every_installed_distribution() -> None:
    """Every receipt's ``environment``: each installed distribution's ``name==version``, counted and digested."""
    import importlib.metadata

    from hermes_nb.core.io import json_digest
    from hermes_nb.nbrun.smoke import environment_digest

    expected = sorted({f"{d.metadata['Name'].lower()}=={d.metadata['Version']}"
                       for d in importlib.metadata.distributions() if d.metadata["Name"]})
    assert environment_digest() == {"packages": len(expected), "sha256": json_digest(expected)}


def test_the_target_is_identified_once_and_no_notebook_asks_again(tmp_path: Path) -> None:
    """One identity step per job: the runner asks ``/health`` (and whether the emulator answers) once; the
    notebooks get the target and the config as parameters and ask neither again."""
    with serve_emulator() as emu:
        code = main(["smoke", "--endpoint", emu.endpoint, "--only", "adapter_check", "--only", "e2e_smoke",
                     "--no-html", "--out", str(tmp_path), "--json"])
        identity = [r for r in emu.requests if r.path == "/health" or "x-hermes-emulator-scenario" in r.headers]
    assert code == 0 and [r.path for r in identity] == ["/health", "/v1/models"]
