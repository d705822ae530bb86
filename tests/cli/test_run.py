"""`hermes-nb run` through the CLI: every classification row against the emulator over loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_nb.cli import main
from hermes_nb.emulator import serve_emulator
from hermes_nb.harness.artifacts import LatestRun, RunsIndex, RuntimeSession, validate_result
from hermes_nb.rig.rig import stop_process
from tests.helpers import ROOT, free_port, no_dns

CLI = ROOT / ".venv" / "bin" / "hermes-nb"


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    with serve_emulator(scenario="ok") as handle:
        yield handle


@pytest.fixture(scope="module")
def upstream() -> Iterator[Any]:
    with serve_emulator(profile="upstream", scenario="ok") as handle:
        yield handle


def overrides(scenario: str, **extra: Any) -> str:
    return json.dumps({"extra_headers": {"x-hermes-emulator-scenario": scenario}, "request_timeout_ms": 5000,
                       **extra})


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["run", "--json", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def assert_tree(doc: dict[str, Any], status: str) -> Path:
    run_dir = Path(doc["run_dir"])
    assert run_dir.is_absolute() and run_dir.is_dir()
    validate_result({k: v for k, v in doc.items() if k != "run_dir"})
    mission_dir = run_dir.parent.parent
    latest = LatestRun.model_validate_json((mission_dir / "latest.json").read_text())
    assert latest.status == status and latest.finished_at is not None
    index = RunsIndex.model_validate_json((mission_dir / "runs" / "index.json").read_text())
    assert index.runs[-1].status == status
    session = RuntimeSession.model_validate(yaml.safe_load((run_dir / "runtime-session.yaml").read_text()))
    assert session.status == ("succeeded" if status == "passed" else "failed")
    on_disk = yaml.safe_load((run_dir / "runtime-result.yaml").read_text())
    assert on_disk == {k: v for k, v in doc.items() if k != "run_dir"}
    root = run_dir.parents[4]  # <root>/.harness/missions/<dir>/runs/<id>: the listed paths are relative to it
    for key in ("prompt_path", "stdout_path", "stderr_path", "diff_path"):
        assert (root / doc[key]).is_file(), (key, sorted(p.name for p in run_dir.iterdir()))
    for key in ("stdout_path", "stderr_path"):
        assert (root / getattr(session, key)).is_file()
    return run_dir


# scenario, status, exit code, reason, text in the error (or warning), partial text kept in stdout.log
ROWS = [
    ("ok", "passed", 0, "ok", None, True),
    ("no-sentinel", "passed", 0, "no_sentinel", "no uh-runtime-final-message block", True),
    ("length", "passed", 0, "length", "finish_reason is length", True),
    ("slow", "passed", 0, "ok", None, True),
    ("empty", "failed", 1, "empty", "empty assistant message", False),
    ("auth-stale", "blocked", 3, "auth", "hermes auth status nous", False),
    ("rate-limited", "blocked", 3, "rate_limited", "HTTP 429", False),
    ("model-missing", "blocked", 3, "model_missing", 'model "nousresearch/hermes-4-405b" not available', False),
    ("server-error", "failed", 1, "http_error", "HTTP 500", False),
    ("bad-gateway", "failed", 1, "http_error", "HTTP 502", False),
    ("upstream-unreachable", "failed", 1, "upstream_unreachable", "HTTP 502 upstream_unreachable", False),
    ("upstream-timeout", "failed", 1, "upstream_timeout", "HTTP 504 upstream_timeout", False),
    ("stream-error-event", "failed", 1, "in_band_error", "error inside the 200 stream", True),
    ("truncated", "failed", 1, "truncated", "truncated", True),
    ("reset", "failed", 1, "truncated", "partial text kept", True),
    ("malformed", "failed", 1, "protocol_error", "malformed stream", True),
]


@pytest.mark.parametrize("scenario, status, code, reason, needle, partial", ROWS, ids=[r[0] for r in ROWS])
def test_classification_rows_through_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any,
                                         scenario: str, status: str, code: int, reason: str, needle: str | None,
                                         partial: bool) -> None:
    exit_code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint,
                                 "--runtime-config-overrides", overrides(scenario))
    assert (exit_code, doc["status"], doc["reason"]) == (code, status, reason)
    assert doc["exit_code"] == code
    if status != "passed":
        assert exit_code != 0 and doc["errors"] and doc["errors"][0].startswith("hermes-proxy: ")
    if needle:
        assert any(needle in line for line in doc["errors"] + doc["warnings"]), doc
    run_dir = assert_tree(doc, status)
    stdout_log = (run_dir / "runtime.stdout.log").read_text()
    assert bool(stdout_log) is partial
    if status == "blocked" or reason == "http_error":
        assert doc["http_status"] >= 400
        assert (run_dir / "runtime.stderr.log").read_text().startswith(f"HTTP {doc['http_status']} body:")
    if scenario == "rate-limited":
        assert doc["retry_after_s"] == 2
    if scenario == "ok":
        assert (run_dir / "runtime-final.txt").read_text().strip()
        assert doc["usage"]["total_tokens"] > 0


def test_stall_times_out_with_partial_text(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint,
                            "--runtime-config-overrides", overrides("stall", request_timeout_ms=800))
    assert (code, doc["status"]) == (1, "failed")
    assert doc["reason"] in ("read_timeout", "deadline")
    assert (Path(doc["run_dir"]) / "runtime.stdout.log").read_text()


def test_reset_mid_stream_from_a_raw_upstream(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              upstream: Any) -> None:
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint", upstream.endpoint,
                            "--runtime-config-overrides", overrides("reset"))
    assert (code, doc["status"]) == (1, "failed")
    assert doc["reason"] in ("stream_broken", "truncated")
    assert (Path(doc["run_dir"]) / "runtime.stdout.log").read_text()


def test_connection_refused_is_blocked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/v1"
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint", endpoint)
    assert (code, doc["status"], doc["reason"]) == (3, "blocked", "unreachable")
    assert "hermes proxy start" in doc["errors"][0]
    assert_tree(doc, "blocked")


def test_dns_failure_is_failed_without_start_hint(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    no_dns(monkeypatch)
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path),
                            "--endpoint", "http://no-such-host.invalid:8645/v1")
    assert (code, doc["status"], doc["reason"]) == (1, "failed", "dns")
    assert "hermes proxy start" not in doc["errors"][0]


def test_human_mode_streams_text_and_prints_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    emu: Any) -> None:
    code = main(["run", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint])
    captured = capsys.readouterr()
    assert code == 0
    log = next(tmp_path.glob(".harness/missions/adhoc/runs/*/runtime.stdout.log")).read_text()
    assert captured.out == log + ("" if log.endswith("\n") else "\n")
    assert captured.err.splitlines()[0].startswith("[PASS] mission adhoc passed (run ")


def test_human_mode_blocked_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    code = main(["run", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint,
                 "--runtime-config-overrides", overrides("auth-stale")])
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("[BLOCKED] mission adhoc blocked")
    assert "  hint: run `hermes auth status nous`" in err


def test_dry_run_cli_sends_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    emu.clear()
    code = main(["run", "--json", "--dry-run", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint,
                 "--run-id", "planned-1"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and emu.requests == []
    assert doc["dry_run"] is True and doc["session"]["status"] == "planned"
    assert doc["run_dir"].endswith("/dry-runs/planned-1")  # outside runs/: no orphan for UH's drift checker


def test_mission_file_and_workflow_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    path = tmp_path / ".harness" / "missions" / "fix" / "mission.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("schema_version: uh.mission.v0\nid: fix-1\ntitle: Fix\nworkflow_profile: nope\n"
                    "runtime_config_overrides: {request_timeout_ms: 4000}\n")
    code, doc, _ = run_json(capsys, str(path), "--root", str(tmp_path), "--endpoint", emu.endpoint)
    assert code == 0 and doc["mission_id"] == "fix-1"
    assert any("workflow 'nope' not found" in w for w in doc["warnings"])
    assert "/.harness/missions/fix/runs/" in doc["run_dir"]


BAD_INPUT = [
    (["--prompt", "x", "--runtime-config-overrides", "[1]"], "must be a JSON object"),
    (["--prompt", "x", "--runtime-config-overrides", "{bad"], "not valid JSON"),
    (["--prompt", "x", "--runtime-config-overrides", '{"temprature": 1}'], "unknown key 'temprature'"),
    (["--prompt", "x", "--endpoint", "not a url"], "endpoint"),
    (["--prompt", "x", "--endpoint", "ftp://h/v1"], "http or https"),
    (["--prompt", "x", "--run-id", "../up"], "invalid run id"),
    (["--prompt", "x", "MISSION-PLACEHOLDER"], "exactly one"),
    ([], "exactly one"),
]


@pytest.mark.parametrize("argv, needle", BAD_INPUT)
def test_bad_input_exit_2_nothing_written(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any,
                                          argv: list[str], needle: str) -> None:
    emu.clear()
    argv = [str(tmp_path / "m.yaml") if a == "MISSION-PLACEHOLDER" else a for a in argv]
    endpoint = [] if "--endpoint" in argv else ["--endpoint", emu.endpoint]
    code = main(["run", "--root", str(tmp_path), *endpoint, *argv])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes-nb: error: ") and needle in lines[0], err
    assert not (tmp_path / ".harness").exists()
    assert emu.requests == []


@pytest.mark.parametrize("doc, needle", [
    ("schema_version: uh.mission.v0\ntitle: T\n", "missing mission id"),
    ("schema_version: uh.mission.v0\nid: x\ntitle: [\n", "invalid YAML"),
    ("schema_version: uh.mission.v0\nid: x\ntitel: T\n", "unknown key 'titel' (did you mean 'title'?) ignored"),
])
def test_bad_mission_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any, doc: str,
                            needle: str) -> None:
    (tmp_path / "mission.yaml").write_text(doc)
    code = main(["run", "--json", str(tmp_path / "mission.yaml"), "--root", str(tmp_path), "--endpoint",
                 emu.endpoint])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["exit_code"] == 2 and needle in out["error"]
    assert not (tmp_path / ".harness").exists()


def test_symlinked_artifact_dir_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / ".harness").symlink_to(outside)
    code = main(["run", "--prompt", "x", "--root", str(tmp_path), "--endpoint", emu.endpoint])
    assert code == 2 and "symlink" in capsys.readouterr().err
    assert list(outside.iterdir()) == []


def test_root_that_is_a_file_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    (tmp_path / "f").write_text("")
    code = main(["run", "--prompt", "x", "--root", str(tmp_path / "f"), "--endpoint", emu.endpoint])
    assert code == 2 and "not a directory" in capsys.readouterr().err


# --------------------------------------------------------------------------- real processes

def wait_for(predicate: Any, *, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.02)


def test_subprocess_passed_run(tmp_path: Path, emu: Any) -> None:
    done = subprocess.run([str(CLI), "run", "--json", "--prompt", "hi", "--root", str(tmp_path), "--endpoint",
                           emu.endpoint], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "passed" and Path(doc["run_dir"]).is_dir()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_subprocess_signal_mid_stream_writes_cancelled(tmp_path: Path, emu: Any, signum: int) -> None:
    proc = subprocess.Popen(
        [str(CLI), "run", "--json", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint,
         "--runtime-config-overrides", overrides("stall", request_timeout_ms=60000)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        def has_text() -> bool:
            logs = list(tmp_path.glob(".harness/missions/adhoc/runs/*/runtime.stdout.log"))
            return bool(logs) and logs[0].stat().st_size > 0

        wait_for(has_text)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        stop_process(proc)  # only if the test failed before the process ended
    assert proc.returncode == 1, err
    doc = json.loads(out)
    assert doc["status"] == "cancelled" and doc["reason"] == "cancelled"
    run_dir = assert_tree(doc, "cancelled")
    assert (run_dir / "runtime.stdout.log").read_text()
    kinds = [json.loads(line)["type"] for line in (run_dir / "events.ndjson").read_text().splitlines()]
    assert "runtime.cancelled" in kinds


def test_module_entry_point_help() -> None:
    done = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "run", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "3 blocked" in done.stdout


def test_unwritable_root_exit_2(capsys: pytest.CaptureFixture[str], emu: Any) -> None:
    emu.clear()
    code = main(["run", "--prompt", "x", "--root", "/proc/self", "--endpoint", emu.endpoint])
    assert code == 2 and "cannot write under" in capsys.readouterr().err
    assert emu.requests == []


def test_path_not_allowed_is_failed(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint + "/extra")
    assert (code, doc["status"], doc["reason"], doc["http_status"]) == (1, "failed", "path_not_allowed", 404)
    assert_tree(doc, "failed")


def test_html_200_is_a_protocol_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Html(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = b"<html><body>not a proxy</body></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Html)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", str(tmp_path), "--endpoint",
                                f"http://127.0.0.1:{server.server_address[1]}/v1")
    finally:
        server.shutdown()
        server.server_close()
    assert (code, doc["status"], doc["reason"]) == (1, "failed", "protocol_error")
    assert_tree(doc, "failed")


def test_root_inferred_from_mission_path(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    path = project / ".harness" / "missions" / "m" / "mission.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("schema_version: uh.mission.v0\nid: m\nname: M\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code = main(["run", "--json", str(path), "--endpoint", emu.endpoint, "--no-sandbox"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and Path(doc["run_dir"]).parent.parent == (project / ".harness/missions/m").resolve()
    assert list(elsewhere.iterdir()) == []


def test_relative_root_from_another_cwd_lists_paths_under_that_root(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path, emu: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    code, doc, _ = run_json(capsys, "--prompt", "hi", "--root", "../proj", "--endpoint", emu.endpoint)
    assert code == 0
    run_dir = assert_tree(doc, "passed")
    assert run_dir.parents[4] == (tmp_path / "proj").resolve()
    assert not (tmp_path / "cwd" / ".harness").exists()


def test_uh_mission_with_an_extra_key_runs_with_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          emu: Any) -> None:
    (tmp_path / "mission.yaml").write_text("schema_version: uh.mission.v0\nid: x\ntitle: T\ncolour: red\n")
    code, doc, _ = run_json(capsys, str(tmp_path / "mission.yaml"), "--root", str(tmp_path),
                            "--endpoint", emu.endpoint)
    assert code == 0 and doc["status"] == "passed"  # UH drops unknown keys; so do we
    assert any("unknown key 'colour' ignored" in w for w in doc["warnings"])


@pytest.mark.parametrize("argv", [["--json"], ["--json", "run", "--bogus"], ["run", "--json", "--root"],
                                  ["--json", "adapter"], ["--json", "check", "--budget-s", "x"]])
def test_json_usage_errors_print_one_object(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 2 and doc["error"]


def test_json_flag_before_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    code = main(["--json", "run", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["status"] == "passed"


def test_disk_error_mid_run_is_one_json_error_and_a_terminal_run(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path, emu: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from hermes_nb.harness.artifacts import MissionArtifacts

    def disk_full(self: MissionArtifacts, path: Path, data: bytes) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MissionArtifacts, "write_bytes", disk_full)  # diff.patch, after the answer
    code = main(["run", "--json", "--prompt", "hi", "--root", str(tmp_path), "--endpoint", emu.endpoint])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1 and doc["exit_code"] == 1 and "No space left on device" in doc["error"]
    assert "Traceback" not in captured.err
    latest = json.loads((tmp_path / ".harness" / "missions" / "adhoc" / "latest.json").read_text())
    assert latest["status"] == "failed" and latest["finished_at"]


BIG_PROMPT = "Refactor the parser.\n" + "x" * 200_000 + "\nend of the prompt ✓\n"


def _prompt_md(tmp_path: Path) -> str:
    (prompt,) = (tmp_path / ".harness" / "missions" / "adhoc" / "dry-runs").glob("*/prompt.md")
    return prompt.read_text(encoding="utf-8")


def test_prompt_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any) -> None:
    source = tmp_path / "prompt.txt"
    source.write_text(BIG_PROMPT, encoding="utf-8")
    code = main(["run", "--json", "--dry-run", "--prompt-file", str(source), "--root", str(tmp_path),
                 "--endpoint", emu.endpoint])
    assert code == 0, capsys.readouterr().err
    assert "end of the prompt ✓" in _prompt_md(tmp_path) and "x" * 200_000 in _prompt_md(tmp_path)


def test_prompt_from_stdin(capsys: pytest.CaptureFixture[str], tmp_path: Path, emu: Any,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BIG_PROMPT.encode())))
    code = main(["run", "--json", "--dry-run", "--prompt", "-", "--root", str(tmp_path), "--endpoint", emu.endpoint])
    assert code == 0, capsys.readouterr().err
    assert "end of the prompt ✓" in _prompt_md(tmp_path)


def test_prompt_from_stdin_runs_for_real_in_a_subprocess(tmp_path: Path, emu: Any) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "run", "--json", "--prompt", "-", "--root",
                           str(tmp_path), "--no-sandbox", "--endpoint", emu.endpoint],
                          input=b"Do the mission from stdin.", capture_output=True, cwd=tmp_path, timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 == doc["exit_code"], proc.stderr
    prompt = (Path(doc["run_dir"]) / "prompt.md").read_text()
    assert "Do the mission from stdin." in prompt


@pytest.mark.parametrize(("args", "message"), [
    (["--prompt-file", "/nonexistent/prompt.txt"], "prompt file not found"),
    (["--prompt-file", "."], "is a directory"),
    (["--prompt", "hi", "--prompt-file", "x.txt"], "exactly one"),
    (["mission.yaml", "--prompt", "-"], "exactly one"),
])
def test_prompt_file_errors_are_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str],
                                       message: str) -> None:
    code = main(["run", *args, "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_empty_stdin_prompt_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"  \n")))
    assert main(["run", "--prompt", "-", "--root", str(tmp_path)]) == 2
    assert "the prompt is empty" in capsys.readouterr().err
