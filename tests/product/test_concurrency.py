"""Concurrent runs on one root: own ids, complete artifacts, each run in runs/index.json exactly once.

Threads in one process against one emulator, and separate ``hermes-nb run`` processes on one root.
``runs/index.json`` is updated under an flock of ``runs/``; ``latest.json`` is replaced atomically; a run
directory is created exclusively (two runs that draw the same generated id in the same second get two).
``make soak`` (``HERMES_NB_SOAK=1``) runs the same tests bigger.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_nb.core.config import validate_config
from hermes_nb.emulator import serve_emulator
from hermes_nb.harness.artifacts import LatestRun, RunsIndex, validate_result
from hermes_nb.harness.mission import Mission
from hermes_nb.harness.run import run

SOAK = bool(os.environ.get("HERMES_NB_SOAK"))  # read at import: the suite's fixtures clear HERMES_* later
THREADS = 1000 if SOAK else 64  # CI size: one wave, every thread released at once by the barrier
PROCESSES = 50 if SOAK else 10
TOKEN = "sk-concurrency-0123456789abcdef"
ARTIFACTS = {"prompt.md", "runtime-session.yaml", "events.ndjson", "runtime.stdout.log", "runtime.stderr.log",
             "diff.patch", "runtime-result.yaml", "runtime-final.txt", "request.json"}


@pytest.fixture(scope="module")
def emu() -> Any:
    with serve_emulator() as handle:
        yield handle


def assert_consistent(root: Path, run_ids: list[str]) -> None:
    """Every run complete and passed, listed once in the index; latest.json names one of them."""
    mission_dir = root / ".harness" / "missions" / "adhoc"
    assert len(set(run_ids)) == len(run_ids), "two runs shared an id"
    index = RunsIndex.model_validate_json((mission_dir / "runs" / "index.json").read_text())
    counts = Counter(entry.run_id for entry in index.runs)
    assert sorted(counts) == sorted(run_ids) and set(counts.values()) == {1}
    assert {entry.status for entry in index.runs} == {"passed"}
    latest = LatestRun.model_validate_json((mission_dir / "latest.json").read_text())
    assert latest.run_id in counts and latest.status == "passed"
    for rid in run_ids:
        run_dir = mission_dir / "runs" / rid
        assert {p.name for p in run_dir.iterdir()} == ARTIFACTS, rid
        doc = yaml.safe_load((run_dir / "runtime-result.yaml").read_text())
        validate_result(doc)
        assert doc["status"] == "passed"
        assert (run_dir / "runtime.stdout.log").read_text()
    assert not [p for p in (mission_dir / "runs").iterdir() if p.name.startswith(".")], "temporary files left"


def test_many_threaded_runs_against_one_emulator(tmp_path: Path, emu: Any) -> None:
    config = validate_config({"endpoint": emu.endpoint, "model": "m", "auth_token": TOKEN,
                              "request_timeout_ms": 120_000})
    start = threading.Barrier(min(THREADS, 64))

    def one(i: int) -> str:
        if i < 64:
            start.wait(30)  # the first wave starts together
        result = run(Mission.adhoc(f"concurrent run {i}"), config, root=tmp_path, handle_signals=False,
                     sandbox=False)
        assert result.status == "passed", result.result["errors"]
        return result.run_id

    with ThreadPoolExecutor(max_workers=64) as pool:
        run_ids = list(pool.map(one, range(THREADS)))
    assert_consistent(tmp_path, run_ids)


def test_many_cli_processes_on_one_root(tmp_path: Path, emu: Any) -> None:
    env = {**os.environ, "HERMES_NB_AUTH_TOKEN": TOKEN}
    procs = [subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "run", "--json", "--prompt", f"process {i}",
                               "--endpoint", emu.endpoint, "--model", "m", "--root", str(tmp_path), "--no-sandbox"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for i in range(PROCESSES)]
    run_ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()[-800:]
        doc = json.loads(out)
        run_ids.append(doc["run_id"])
        assert TOKEN not in out.decode() + err.decode()
    assert_consistent(tmp_path, run_ids)


def test_a_taken_generated_run_id_is_drawn_again(tmp_path: Path, emu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs drawing the same id in the same second (what 200 at once can do) get two directories."""
    import hermes_nb.harness.artifacts as artifacts_mod
    import hermes_nb.harness.run as run_mod

    config = validate_config({"endpoint": emu.endpoint, "model": "m", "auth_token": TOKEN})
    ids = iter(["20260101T000000Z-aaaaaa", "20260101T000000Z-aaaaaa", "20260101T000000Z-aaaaaa",
                "20260101T000000Z-bbbbbb"])
    monkeypatch.setattr(run_mod, "new_run_id", lambda: next(ids))
    monkeypatch.setattr(artifacts_mod, "new_run_id", lambda: next(ids))
    first = run(Mission.adhoc("one"), config, root=tmp_path, handle_signals=False, sandbox=False)
    second = run(Mission.adhoc("two"), config, root=tmp_path, handle_signals=False, sandbox=False)
    assert (first.run_id, second.run_id) == ("20260101T000000Z-aaaaaa", "20260101T000000Z-bbbbbb")
    assert_consistent(tmp_path, [first.run_id, second.run_id])


def test_claiming_a_run_directory_is_exclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race preflight cannot see: the directory appeared after it looked."""
    import hermes_nb.harness.artifacts as artifacts_mod
    from hermes_nb.core.errors import ArtifactError

    arts = artifacts_mod.MissionArtifacts(tmp_path, "adhoc")
    taken = "20260101T000000Z-cccccc"
    assert arts.claim_run_id(taken, explicit=False) == taken
    monkeypatch.setattr(artifacts_mod, "new_run_id", lambda: "20260101T000000Z-dddddd")
    assert arts.claim_run_id(taken, explicit=False) == "20260101T000000Z-dddddd"
    with pytest.raises(ArtifactError, match="already exists"):
        arts.claim_run_id(taken, explicit=True)


_WRITER = r"""
import sys
from pathlib import Path
import nbformat
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import append_index, index_entry
from hermes_nb.receipts.write import write_receipt

root, worker, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    run_id = f"20260101T0000{worker:02d}Z-{i:06x}"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x = {worker} * {i}")]
    meta = {"schema": "hermes-nb.receipt.v1", "notebook": "e2e_smoke", "run_id": run_id, "verdict": "passed",
            "target_kind": "emulator", "endpoint": "http://127.0.0.1:1/v1", "model": "m",
            "started_at": "2026-01-01T00:00:00.000Z", "duration_s": 1.0}
    red = Redactor(["sk-concurrency-0123456789abcdef"])
    files = write_receipt(nb, root / "2026-01-01" / run_id, "e2e_smoke", meta, redactor=red, page=True)
    append_index(root, [index_entry(root, files, meta)], redactor=red)
"""


def test_concurrent_receipt_writers_keep_one_verifiable_chain(tmp_path: Path) -> None:
    """What two smokes into one receipts directory do (``make soak`` runs real smokes): the chain holds."""
    from hermes_nb import verify_receipts
    from hermes_nb.receipts.index import load_index

    workers, each = (6, 5) if SOAK else (4, 3)
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(w), str(each)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(workers)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()[-800:]
    report = verify_receipts(tmp_path, secrets=[TOKEN])
    assert report.ok, report.problems
    assert len(load_index(tmp_path)["receipts"]) == workers * each


@pytest.mark.skipif(not SOAK, reason="two whole smokes at once: make soak")
def test_two_smokes_into_one_receipts_directory(tmp_path: Path) -> None:
    from hermes_nb import verify_receipts

    procs = [subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "smoke", "--json", "--no-html", "--out",
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-800:]
    report = verify_receipts(tmp_path)
    assert report.ok, report.problems
