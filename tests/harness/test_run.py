"""plan / dry_run / run against the emulator over loopback: artifacts, streaming, cancellation."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_nb import HermesProxyRuntimeConfig
from hermes_nb.core.config import validate_config
from hermes_nb.core.errors import ArtifactError
from hermes_nb.emulator import serve_emulator
from hermes_nb.harness.artifacts import LatestRun, RunsIndex, RuntimeSession, validate_result
from hermes_nb.harness.mission import Mission, load_mission
from hermes_nb.harness.run import dry_run, plan_run, run

CANARY = "sk-canary-run-0123456789abcdef"


@pytest.fixture(scope="module")
def emu() -> Iterator[Any]:
    with serve_emulator(scenario="ok") as handle:
        yield handle


@pytest.fixture
def clean_emu(emu: Any) -> Any:
    emu.clear()
    return emu


def config_for(endpoint: str, scenario: str = "ok", **extra: Any) -> HermesProxyRuntimeConfig:
    return validate_config({"endpoint": endpoint, "model": "nousresearch/hermes-4-405b", "auth_token": CANARY,
                            "request_timeout_ms": 5000,
                            "extra_headers": {"x-hermes-emulator-scenario": scenario}, **extra})


def mission_dir(root: Path, name: str = "adhoc") -> Path:
    return root / ".harness" / "missions" / name


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.ndjson").read_text().splitlines()]


def assert_listed_paths_exist(root: Path, run_dir: Path) -> None:
    """Every path the result and the session name exists (the other helper's missing-stdout report)."""
    session = yaml.safe_load((run_dir / "runtime-session.yaml").read_text())
    docs = [session]
    if (run_dir / "runtime-result.yaml").exists():
        docs += [yaml.safe_load((run_dir / "runtime-result.yaml").read_text()),
                 yaml.safe_load((run_dir.parents[1] / "runtime-result.yaml").read_text())]
    listed = [doc[key] for doc in docs for key in ("prompt_path", "stdout_path", "stderr_path", "diff_path")
              if key in doc]
    assert len(listed) >= (4 if len(docs) > 1 else 0)
    assert all((root / rel).is_file() for rel in listed), sorted(p.name for p in run_dir.iterdir())
    assert all(not Path(rel).is_absolute() and rel.startswith(".harness/missions/") for rel in listed)


def assert_no_canary(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path


def test_plan_is_pure_and_redacted(tmp_path: Path) -> None:
    config = config_for("http://127.0.0.1:9/v1", system_prompt="Be terse.")
    plan = plan_run(Mission.adhoc("hi"), config)
    assert plan.command == "POST http://127.0.0.1:9/v1/chat/completions"
    assert plan.url == "http://127.0.0.1:9/v1/chat/completions"
    body = json.loads(plan.args[0])
    assert plan.args[0].startswith("{\n  ")  # pretty-printed
    assert body["messages"][0] == {"role": "system", "content": "Be terse."}
    assert body["messages"][1]["role"] == "user" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert plan.headers["authorization"] == "Bearer <redacted>"
    assert CANARY not in plan.model_dump_json()
    assert plan.timeouts["request_timeout_ms"] == 5000
    assert '"request_timeout_ms":5000,' in plan.model_dump_json()  # a whole number in its unit, as UH writes it


def test_plan_and_dry_run_json_hold_no_secret_but_the_request_keeps_the_prompt(tmp_path: Path,
                                                                                 clean_emu: Any) -> None:
    mission = Mission.adhoc(f"echo {CANARY} back")
    config = config_for(clean_emu.endpoint)
    plan = plan_run(mission, config)
    assert CANARY not in plan.prompt and CANARY in plan.request_prompt
    planned = dry_run(mission, config, root=tmp_path)
    assert CANARY not in json.dumps(planned.to_json())
    assert_no_canary(tmp_path)
    run(mission, config, root=tmp_path, handle_signals=False)
    assert CANARY in clean_emu.requests[-1].json["messages"][-1]["content"]  # sent as the user wrote it
    assert_no_canary(tmp_path)


def test_dry_run_sends_nothing(tmp_path: Path, clean_emu: Any) -> None:
    result = dry_run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, run_id="dry-1")
    assert clean_emu.requests == []
    run_dir = mission_dir(tmp_path) / "dry-runs" / "dry-1"
    assert sorted(p.name for p in run_dir.iterdir()) == ["prompt.md", "request.json", "runtime-session.yaml"]
    # nothing under runs/ that runs/index.json does not list: UH's drift checker flags such orphans
    runs = mission_dir(tmp_path) / "runs"
    assert not runs.exists() or [p.name for p in runs.iterdir()] in ([], ["index.json"])
    session = RuntimeSession.model_validate(yaml.safe_load((run_dir / "runtime-session.yaml").read_text()))
    assert session.status == "planned" and session.command and session.command.startswith("POST ")
    assert session.stdout_path is None and session.stderr_path is None  # no log exists to point at
    assert_listed_paths_exist(tmp_path, run_dir)
    assert not (mission_dir(tmp_path) / "latest.json").exists()
    assert result.run_dir == run_dir.resolve() or result.run_dir == run_dir
    assert_no_canary(tmp_path)


def test_passed_run_writes_the_uh_tree(tmp_path: Path, clean_emu: Any) -> None:
    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    mdir = mission_dir(tmp_path)
    run_dir = result.run_dir
    assert result.status == "passed" and result.exit_code == 0
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([
        "prompt.md", "runtime-session.yaml", "events.ndjson", "runtime.stdout.log", "runtime.stderr.log",
        "diff.patch", "runtime-result.yaml", "runtime-final.txt", "request.json"])
    latest = LatestRun.model_validate_json((mdir / "latest.json").read_text())
    assert latest.status == "passed" and latest.run_id == result.run_id and latest.finished_at
    index = RunsIndex.model_validate_json((mdir / "runs" / "index.json").read_text())
    assert [(r.run_id, r.status, r.runtime) for r in index.runs] == [(result.run_id, "passed", "hermes-proxy")]
    assert sorted(p.name for p in (mdir / "runs").iterdir()) == sorted([result.run_id, "index.json"])  # UH's tree only
    assert sorted(p.name for p in mdir.iterdir()) == ["latest.json", "runs", "runtime-result.yaml"]
    session = RuntimeSession.model_validate(yaml.safe_load((run_dir / "runtime-session.yaml").read_text()))
    assert session.status == "succeeded" and session.exit_code == 0
    doc = yaml.safe_load((run_dir / "runtime-result.yaml").read_text())
    validate_result(doc)
    assert doc == yaml.safe_load((mdir / "runtime-result.yaml").read_text())  # mirrored copy
    assert doc["prompt_path"] == f".harness/missions/adhoc/runs/{result.run_id}/prompt.md"
    assert doc["usage"]["total_tokens"] > 0 and doc["http_status"] == 200
    assert (run_dir / "runtime.stdout.log").read_text() == result.text != ""
    assert (run_dir / "runtime-final.txt").read_text() == result.outcome.final_message != ""
    assert (run_dir / "diff.patch").read_bytes() == b""
    assert_listed_paths_exist(tmp_path, run_dir)
    events = read_events(run_dir)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "runtime.started" and kinds[-2:] == ["runtime.finished", "runtime.usage"]
    assert set(kinds[1:-2]) == {"hermes-proxy.sse"} and events[-2]["status"] == "succeeded"
    assert events[-1]["source"] == "runtime"
    assert events[-3]["payload"] == "[DONE]"
    audit = (tmp_path / ".harness" / "audit" / "events.ndjson").read_text().splitlines()
    assert json.loads(audit[-1])["type"] == "mission.run"
    sent = clean_emu.requests[-1]
    assert sent.json["stream_options"] == {"include_usage": True}
    assert_no_canary(tmp_path)


def test_stdout_log_flushed_per_delta_before_stream_ends(tmp_path: Path, clean_emu: Any) -> None:
    seen: list[tuple[str, str, list[dict[str, Any]]]] = []

    def on_delta(delta: str) -> None:
        run_dir = next((mission_dir(tmp_path) / "runs").glob("*/"))
        seen.append((delta, (run_dir / "runtime.stdout.log").read_text(), read_events(run_dir)))

    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint, "slow"), root=tmp_path,
                 on_delta=on_delta, handle_signals=False)
    assert result.status == "passed" and len(seen) >= 2
    first_delta, log_then, events_then = seen[0]
    assert log_then == first_delta  # on disk when the hook ran ...
    payloads = [e.get("payload") for e in events_then]
    assert "[DONE]" not in payloads  # ... while the stream was still open
    assert [e["type"] for e in events_then if e["type"].startswith("runtime.")] == ["runtime.started"]
    contents = [c.get("delta", {}).get("content") for p in payloads if isinstance(p, dict)
                for c in p.get("choices") or []]
    assert first_delta in contents  # its SSE event is already in events.ndjson
    assert seen[1][1] == seen[0][0] + seen[1][0]
    final_payloads = [e.get("payload") for e in read_events(result.run_dir)]
    assert "[DONE]" in final_payloads  # the check above can fail


def test_sse_events_have_receive_times(tmp_path: Path, clean_emu: Any) -> None:
    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    sse = [e for e in read_events(result.run_dir) if e["type"] == "hermes-proxy.sse"]
    assert sse and all(e["timestamp"].endswith("Z") and "t" in e for e in sse)
    times = [e["t"] for e in sse]
    assert times == sorted(times)


def test_mission_file_under_harness_uses_its_dir(tmp_path: Path, clean_emu: Any) -> None:
    path = tmp_path / ".harness" / "missions" / "my-dir" / "mission.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("schema_version: uh.mission.v0\nid: mid\ntitle: T\nobjective: say hi\n")
    result = run(load_mission(path), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    assert result.run_dir.parent.parent == (tmp_path / ".harness" / "missions" / "my-dir").resolve()
    assert result.result["mission_id"] == "mid"


def test_bad_run_id_writes_nothing(tmp_path: Path, clean_emu: Any) -> None:
    with pytest.raises(ArtifactError, match="invalid run id"):
        run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, run_id="../x", handle_signals=False)
    assert list(tmp_path.iterdir()) == [] and clean_emu.requests == []


def test_symlinked_mission_dir_writes_nothing(tmp_path: Path, clean_emu: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / ".harness" / "missions").mkdir(parents=True)
    mission_dir(tmp_path).symlink_to(outside)
    with pytest.raises(ArtifactError, match="symlink"):
        run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    assert list(outside.iterdir()) == [] and clean_emu.requests == []


def test_unexpected_error_still_ends_with_result(tmp_path: Path, clean_emu: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_nb.harness.run

    def boom(base: Any) -> Any:
        raise RuntimeError("hook exploded")

    monkeypatch.setattr(hermes_nb.harness.run, "capture", boom)  # fails after the answer, before diff/final
    with pytest.raises(RuntimeError, match="hook exploded"):
        run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    mdir = mission_dir(tmp_path)
    assert_listed_paths_exist(tmp_path, next((mdir / "runs").glob("*/")))
    latest = LatestRun.model_validate_json((mdir / "latest.json").read_text())
    assert latest.status == "failed" and latest.finished_at
    doc = yaml.safe_load((mdir / "runtime-result.yaml").read_text())
    validate_result(doc)
    assert "run aborted: RuntimeError: hook exploded" in doc["errors"][0]
    assert RunsIndex.model_validate_json((mdir / "runs" / "index.json").read_text()).runs[0].status == "failed"


def test_keyboard_interrupt_without_handlers_is_cancelled(tmp_path: Path, clean_emu: Any) -> None:
    def interrupt(delta: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, on_delta=interrupt,
            handle_signals=False)
    doc = yaml.safe_load((mission_dir(tmp_path) / "runtime-result.yaml").read_text())
    assert doc["status"] == "cancelled"
    assert json.loads((mission_dir(tmp_path) / "latest.json").read_text())["status"] == "cancelled"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_mid_stream_cancels_in_process(tmp_path: Path, clean_emu: Any, signum: int) -> None:
    previous = signal.getsignal(signum)

    def on_delta(delta: str) -> None:
        os.kill(os.getpid(), signum)

    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint, "stall"), root=tmp_path, on_delta=on_delta)
    assert result.status == "cancelled" and result.exit_code == 1
    assert signal.getsignal(signum) is previous  # handlers restored
    assert_listed_paths_exist(tmp_path, result.run_dir)
    stdout = (result.run_dir / "runtime.stdout.log").read_text()
    assert stdout == result.text != ""  # the partial text is kept
    assert "partial text kept" in result.result["errors"][0]
    kinds = [e["type"] for e in read_events(result.run_dir)]
    assert "runtime.cancelled" in kinds and kinds[-2] == "runtime.finished"
    assert json.loads((mission_dir(tmp_path) / "latest.json").read_text())["status"] == "cancelled"
    validate_result(result.result)


def git_repo(root: Path) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"}
    (root / "f.txt").write_text("x\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "i"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.mark.parametrize("sandbox", [True, False])
def test_sandbox_and_in_place_give_empty_diff(tmp_path: Path, clean_emu: Any, sandbox: bool) -> None:
    git_repo(tmp_path)
    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, sandbox=sandbox,
                 handle_signals=False)
    assert result.status == "passed"
    assert (result.run_dir / "diff.patch").read_bytes() == b""
    assert_listed_paths_exist(tmp_path, result.run_dir)
    notes = result.result.get("notes") or []
    assert any("sandbox copy" in n for n in notes) is sandbox
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert any(n.startswith(f"diff base: commit {head}") for n in notes)
    assert result.result["errors"] == []


def test_failed_sandbox_copy_writes_nothing(tmp_path: Path, clean_emu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_nb.harness.run

    (tmp_path / "a").write_text("x")
    (tmp_path / "b").write_text("y")
    monkeypatch.setattr(hermes_nb.harness.run, "MAX_SANDBOX_ENTRIES", 1)
    with pytest.raises(ArtifactError, match="too large"):
        run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    assert not (tmp_path / ".harness").exists() and clean_emu.requests == []


def test_non_streamed_answer_lands_in_stdout_log(tmp_path: Path, clean_emu: Any) -> None:
    deltas: list[str] = []
    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint, stream=False), root=tmp_path,
                 on_delta=deltas.append, handle_signals=False)
    assert result.status == "passed" and clean_emu.requests[-1].json["stream"] is False
    assert (result.run_dir / "runtime.stdout.log").read_text() == result.text != ""
    assert result.result["usage"]["total_tokens"] > 0


def test_unsafe_mission_id_outside_harness_writes_nothing(tmp_path: Path, clean_emu: Any) -> None:
    path = tmp_path / "mission.yaml"
    path.write_text("schema_version: uh.mission.v0\nid: ../up\ntitle: X\n")
    mission = load_mission(path)  # UH accepts any non-empty id ...
    with pytest.raises(ArtifactError, match="not a safe path component"):  # ... but it cannot name a directory
        run(mission, config_for(clean_emu.endpoint), root=tmp_path, handle_signals=False)
    assert not (tmp_path / ".harness").exists() and clean_emu.requests == []


@pytest.mark.parametrize("when", ["before_request", "while_finishing"])
def test_sigterm_outside_the_request_never_leaves_the_run_running(tmp_path: Path, clean_emu: Any,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   when: str) -> None:
    from hermes_nb.harness.artifacts import MissionArtifacts

    delivered: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: delivered.append(signum))
    try:
        # a SIGTERM while the audit line (before the request) or diff.patch (after it) is written;
        # without the runner's handler the process would die there with latest.json "running"
        target = "audit" if when == "before_request" else "write_bytes"
        original = getattr(MissionArtifacts, target)

        def send_sigterm(self: MissionArtifacts, *args: Any) -> Any:
            os.kill(os.getpid(), signal.SIGTERM)
            return original(self, *args)

        monkeypatch.setattr(MissionArtifacts, target, send_sigterm)
        result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert delivered == []  # the runner's handler took it, not the previous one
    latest = json.loads((mission_dir(tmp_path) / "latest.json").read_text())
    if when == "before_request":
        assert result.status == latest["status"] == "cancelled" and clean_emu.requests == []
        assert "no text had arrived" in result.result["errors"][0]
    else:
        assert result.status == latest["status"] == "passed"
    assert_listed_paths_exist(tmp_path, result.run_dir)


def test_failing_hooks_warn_and_the_run_goes_on(tmp_path: Path, clean_emu: Any) -> None:
    calls: list[str] = []

    def on_delta(delta: str) -> None:
        calls.append(delta)
        if len(calls) == 2:
            raise ValueError("widget gone")

    def on_event(record: Any) -> None:
        raise BrokenPipeError("reader closed")

    result = run(Mission.adhoc("hi"), config_for(clean_emu.endpoint), root=tmp_path, on_delta=on_delta,
                 on_event=on_event, handle_signals=False)
    assert result.status == "passed" and result.exit_code == 0 and len(calls) == 2
    warnings = result.result["warnings"]
    assert any(w.startswith("on_delta callback raised ValueError: widget gone") for w in warnings)
    assert any(w.startswith("on_event callback raised BrokenPipeError") for w in warnings)
    assert (result.run_dir / "runtime.stdout.log").read_text() == result.text  # every delta still logged
    assert "warning: on_delta callback raised" in (result.run_dir / "runtime.stderr.log").read_text()
    validate_result(result.result)


def test_mission_outside_harness_writes_under_root_by_id_and_says_so(tmp_path: Path, clean_emu: Any) -> None:
    elsewhere, root = tmp_path / "elsewhere", tmp_path / "proj"
    elsewhere.mkdir()
    root.mkdir()
    (elsewhere / "m.yaml").write_text("schema_version: uh.mission.v0\nid: fix-1\ntitle: X\n")
    result = run(load_mission(elsewhere / "m.yaml"), config_for(clean_emu.endpoint), root=root,
                 handle_signals=False)
    assert result.run_dir.parent.parent == (root / ".harness" / "missions" / "fix-1").resolve()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["m.yaml"]  # nothing next to the mission file
    assert any("UH would write none" in n and ".harness/missions/fix-1/" in n for n in result.result["notes"])
    # the same id inside <root>/.harness/missions/<id>/mission.yaml: placed by its directory, no note
    home = root / ".harness" / "missions" / "fix-1"
    (home / "mission.yaml").write_text((elsewhere / "m.yaml").read_text())
    placed = run(load_mission(home / "mission.yaml"), config_for(clean_emu.endpoint), root=root,
                 handle_signals=False)
    assert placed.run_dir.parent.parent == home.resolve()
    assert not any("UH would write none" in n for n in placed.result.get("notes", []))


def test_mission_id_with_a_slash_runs_from_its_harness_directory(tmp_path: Path, clean_emu: Any) -> None:
    home = tmp_path / ".harness" / "missions" / "d1"
    home.mkdir(parents=True)
    (home / "mission.yaml").write_text("schema_version: uh.mission.v0\nid: team/fix-12\ntitle: X\n")
    result = run(load_mission(home / "mission.yaml"), config_for(clean_emu.endpoint), root=tmp_path,
                 handle_signals=False)
    assert result.status == "passed" and result.result["mission_id"] == "team/fix-12"
    assert result.run_dir.parent.parent == home.resolve()
    assert_listed_paths_exist(tmp_path, result.run_dir)


def test_a_dry_run_leaves_no_orphan_next_to_real_runs(tmp_path: Path, clean_emu: Any) -> None:
    config = config_for(clean_emu.endpoint)
    real = run(Mission.adhoc("hi"), config, root=tmp_path, handle_signals=False)
    dry_run(Mission.adhoc("hi"), config, root=tmp_path, run_id="dry-2")
    runs = mission_dir(tmp_path) / "runs"
    indexed = {entry["run_id"] for entry in json.loads((runs / "index.json").read_text())["runs"]}
    on_disk = {p.name for p in runs.iterdir() if p.is_dir()}
    assert on_disk == indexed == {real.run_id}
    with pytest.raises(ArtifactError, match="already exists"):
        dry_run(Mission.adhoc("hi"), config, root=tmp_path, run_id="dry-2")


def test_request_json_shows_the_request_sent_with_secrets_masked(tmp_path: Path, clean_emu: Any) -> None:
    canary = "sk-canary-request-0123456789ab"
    config = validate_config({"endpoint": clean_emu.endpoint, "model": "hermes-4-405b", "auth_token": canary,
                              "extra_headers": {"x-trace": "t-1", "x-api-key": canary}})
    result = run(Mission.adhoc("Do the mission."), config, root=tmp_path, handle_signals=False)
    doc = json.loads((result.run_dir / "request.json").read_text())
    assert (doc["method"], doc["url"]) == ("POST", clean_emu.endpoint + "/chat/completions")
    assert doc["headers"]["authorization"] == "Bearer <redacted>" and doc["headers"]["x-api-key"] == "<redacted>"
    assert doc["headers"]["x-trace"] == "t-1" and doc["headers"]["content-type"] == "application/json"
    assert doc["body"]["model"] == "hermes-4-405b" and doc["body"]["stream"] is True
    prompt = (result.run_dir / "prompt.md").read_bytes()  # the one copy; the request refers to it
    assert doc["body"]["messages"][-1]["content"] == (
        f"<prompt.md: {len(prompt)} bytes, sha256:{hashlib.sha256(prompt).hexdigest()}>")
    assert b"Do the mission." in prompt
    sent = clean_emu.requests[-1]
    assert sent.json["messages"][-1]["content"].encode() == prompt  # what the proxy received is what prompt.md holds
    assert [m["role"] for m in sent.json["messages"]] == [m["role"] for m in doc["body"]["messages"]]
    assert canary not in (result.run_dir / "request.json").read_text()
