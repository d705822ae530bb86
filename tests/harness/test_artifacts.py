"""The UH artifact writer: ids, formats, safe paths, latest/index updates."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.io import iso_now, new_run_id, validate_run_id
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.artifacts import LatestRun, MissionArtifacts, RunsIndex


def test_run_id_format() -> None:
    rid = new_run_id(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert re.fullmatch(r"20260102T030405Z-[0-9a-f]{6}", rid)
    assert len({new_run_id() for _ in range(20)}) > 1
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", new_run_id())


@pytest.mark.parametrize("rid", ["a", "run-1.2_3", "A" * 128])
def test_explicit_run_id_ok(rid: str) -> None:
    assert validate_run_id(rid) == rid


@pytest.mark.parametrize("rid", ["", "-x", ".hidden", "a/b", "..", "a b", "A" * 129, "é"])
def test_explicit_run_id_rejected(rid: str) -> None:
    with pytest.raises(ArtifactError, match="invalid run id"):
        validate_run_id(rid)


def test_iso_timestamp_ms_z() -> None:
    assert iso_now(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"


def test_json_format_two_spaces_no_final_newline(tmp_path: Path) -> None:
    arts = MissionArtifacts(tmp_path, "m1")
    assert arts.write_json(arts.path("doc.json"), {"a": [1]}).read_text() == '{\n  "a": [\n    1\n  ]\n}'


def test_latest_and_index(tmp_path: Path) -> None:
    arts = MissionArtifacts(tmp_path, "m1")
    arts.mark("r1", "2026-01-01T00:00:00.000Z", "running", runtime="hermes-proxy")
    arts.update_index("r2", started_at="2026-01-01T00:00:01.000Z", status="running")
    arts.mark("r1", "2026-01-01T00:00:00.000Z", "passed", "2026-01-01T00:00:02.000Z")
    latest_text = (tmp_path / ".harness/missions/m1/latest.json").read_text()
    assert not latest_text.endswith("\n")
    LatestRun.model_validate_json(latest_text)
    index = RunsIndex.model_validate_json((tmp_path / ".harness/missions/m1/runs/index.json").read_text())
    assert [(r.run_id, r.status) for r in index.runs] == [("r1", "passed"), ("r2", "running")]
    assert index.runs[0].runtime == "hermes-proxy"
    leftovers = [p.name for p in (tmp_path / ".harness/missions/m1").rglob("*.tmp")]
    assert leftovers == []


def test_symlinked_mission_dir_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".harness" / "missions").mkdir(parents=True)
    (tmp_path / ".harness" / "missions" / "m1").symlink_to(elsewhere)
    arts = MissionArtifacts(tmp_path, "m1")
    with pytest.raises(ArtifactError, match="symlink"):
        arts.preflight("r1")
    with pytest.raises(ArtifactError, match="symlink"):
        arts.mark("r1", iso_now(), "running")
    assert list(elsewhere.iterdir()) == []


def test_symlinked_file_refused(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    mdir = tmp_path / ".harness" / "missions" / "m1"
    mdir.mkdir(parents=True)
    (mdir / "latest.json").symlink_to(target)
    arts = MissionArtifacts(tmp_path, "m1")
    with pytest.raises(ArtifactError, match="symlink"):
        arts.preflight("r1")
    assert target.read_text() == "keep"


def test_escaping_paths_refused(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="not a safe path component"):
        MissionArtifacts(tmp_path, "../../etc")
    arts = MissionArtifacts(tmp_path, "m1")
    with pytest.raises(ArtifactError, match="escapes"):
        arts.path("..", "m2", "x")
    with pytest.raises(ArtifactError, match="invalid run id"):
        arts.run_dir("../x")


def test_existing_run_dir_refused(tmp_path: Path) -> None:
    arts = MissionArtifacts(tmp_path, "m1")
    (tmp_path / ".harness/missions/m1/runs/r1").mkdir(parents=True)
    with pytest.raises(ArtifactError, match="already exists"):
        arts.claim_run_id("r1", explicit=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_unwritable_root(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o500)
    try:
        with pytest.raises(ArtifactError, match="not writable"):
            MissionArtifacts(root, "m1").preflight("r1")
        assert list(root.iterdir()) == []
    finally:
        root.chmod(0o700)


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        MissionArtifacts(tmp_path / "nope", "m1")


def test_redaction_applies_to_every_write(tmp_path: Path) -> None:
    canary = "sk-canary-0123456789abcdef"
    arts = MissionArtifacts(tmp_path, "m1", redactor=Redactor([canary]))
    arts.write_yaml(arts.path("doc.yaml"), {"k": f"token {canary}"})
    arts.audit("event", {"payload": canary})
    arts.write_text(arts.path("log.txt"), canary)
    for path in (tmp_path / ".harness").rglob("*"):
        if path.is_file():
            assert canary not in path.read_text()


def test_audit_line(tmp_path: Path) -> None:
    arts = MissionArtifacts(tmp_path, "m1")
    arts.audit("mission.run", {"runtime": "hermes-proxy", "mission_id": "m1", "run_id": "r1"})
    line = json.loads((tmp_path / ".harness/audit/events.ndjson").read_text().splitlines()[0])
    assert line["type"] == "mission.run" and line["run_id"] == "r1"


def test_unwritable_root_probe(tmp_path: Path) -> None:
    """A directory nobody can create files in (``/proc/self``), whatever the user's privileges."""
    with pytest.raises(ArtifactError, match="cannot write under"):
        MissionArtifacts("/proc/self", "m1").preflight("r1")


def test_corrupt_index_fails_before_any_write(tmp_path: Path) -> None:
    index = tmp_path / ".harness" / "missions" / "m1" / "runs" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text("{not json")
    with pytest.raises(ArtifactError, match="unreadable runs index"):
        MissionArtifacts(tmp_path, "m1").preflight("r1")
    assert not (tmp_path / ".harness" / "missions" / "m1" / "latest.json").exists()


def test_uh_models_reject_null_for_optional_fields() -> None:
    from pydantic import ValidationError

    entry = {"run_id": "r", "started_at": "2026-01-01T00:00:00.000Z", "status": "running"}
    RunsIndex.model_validate({"schema_version": "uh.runs-index.v0", "runs": [entry]})
    with pytest.raises(ValidationError):
        RunsIndex.model_validate({"schema_version": "uh.runs-index.v0", "runs": [entry | {"finished_at": None}]})
    LatestRun.model_validate({"schema_version": "uh.latest-run.v0", "run_id": "r", "status": "running",
                              "started_at": "2026-01-01T00:00:00.000Z", "finished_at": None})


def test_concurrent_index_updates_keep_every_run(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def worker(n: int) -> None:
        arts = MissionArtifacts(tmp_path, "m1")  # one writer object per run, as in real runs
        for i in range(10):
            arts.update_index(f"r{n}-{i}", started_at="2026-01-01T00:00:00.000Z", status="running")

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(worker, range(6)))
    index = RunsIndex.model_validate_json((tmp_path / ".harness/missions/m1/runs/index.json").read_text())
    assert sorted(r.run_id for r in index.runs) == sorted(f"r{n}-{i}" for n in range(6) for i in range(10))
