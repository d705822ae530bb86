"""Receipts in shared storage (s3:// through papermill's handler, against moto on loopback) and two
runners writing into one place at once (S3 prefix: one index object per run; local: the file lock)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_nb import verify_receipts
from hermes_nb.cli import main
from hermes_nb.receipts.store import RemoteStore, index_documents
from tests.helpers import S3_BUCKET, run_smoke_on


def _smoke(out: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_"))} | env
    return subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "smoke", "--only", "adapter_check", "--no-html",
                             "--out", out, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full)


def _finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=110)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out)


def test_two_runners_publish_to_one_s3_prefix_and_it_verifies(s3_env: dict[str, str], capsys) -> None:
    import boto3

    url = f"s3://{S3_BUCKET}/team/hermes"
    first, second = _smoke(url, s3_env), _smoke(url, s3_env)  # at once, like two CI runners
    runs = [_finish(first), _finish(second)]
    assert runs[0]["run_id"] != runs[1]["run_id"]
    for run in runs:
        assert run["out_dir"] == url and run["receipts"][0]["path"].startswith(url + "/")
    s3 = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL_S3"])
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="team/hermes/")["Contents"])
    assert sorted(k for k in keys if k.startswith("team/hermes/index.d/")) == sorted(
        f"team/hermes/index.d/{r['run_id']}.json" for r in runs)
    assert not any(k.endswith(("/index.json", "README.md")) for k in keys)  # no shared object to race on
    # index.html: rebuilt from every run's index object (not just the last run's), every link an object there
    third = _finish(_smoke(url, s3_env))  # after both: its page has all three runs whatever the two raced to
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="team/hermes/")["Contents"])
    page = s3.get_object(Bucket=S3_BUCKET, Key="team/hermes/index.html")["Body"].read().decode()
    assert all(f'id="{r["run_id"]}"' in page for r in [*runs, third])
    hrefs = set(re.findall(r'href="([^"]+)"', page))
    assert "index.d/" in hrefs and "index.json" not in hrefs  # the chain is the per-run index objects
    assert {f"team/hermes/{h}" for h in hrefs - {"index.d/"}} <= set(keys), hrefs
    assert len(hrefs) == 1 + 3 * 2  # the chain + (notebook, sidecar) per receipt: --no-html, so no page link

    runs.append(third)
    assert main(["receipts", "list", url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(e["run_id"] for e in listed["receipts"]) == sorted(r["run_id"] for r in runs)
    assert main(["receipts", "verify", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and len(report["receipts"]) == 3 and report["directory"] == url

    # tamper with one published receipt: verify names its URL and exits 1
    key = next(k for k in keys if k.endswith("adapter_check.ipynb"))
    body = s3.get_object(Bucket=S3_BUCKET, Key=key)["Body"].read().decode().replace('"passed"', '"failed"', 1)
    s3.put_object(Bucket=S3_BUCKET, Key=key, Body=body.encode())
    assert main(["receipts", "verify", url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(f"s3://{S3_BUCKET}/{key}" in p for p in report["problems"]), report["problems"]


def test_remote_store_round_trips_bytes_exactly(s3_env: dict[str, str]) -> None:
    store = RemoteStore(f"s3://{S3_BUCKET}/exact")
    store.write_text("a/b.json", "{}\n\n")
    store.write_text("c.txt", "no newline")
    assert store.list_files() == ["a/b.json", "c.txt"]
    assert store.read_text("a/b.json") == "{}\n\n" and store.read_text("c.txt") == "no newline"


@pytest.mark.parametrize(("out", "needle"), [("nosuch://bucket/x", "no papermill I/O handler"),
                                             ("s3://missing-bucket/x", "cannot list the prefix")])
def test_bad_storage_urls_are_usage_errors_before_any_notebook_runs(s3_env, out: str, needle: str, capsys) -> None:
    assert main(["smoke", "--out", out, "--json"]) == 2
    assert needle in json.loads(capsys.readouterr().out)["error"]


def test_two_local_smokes_into_one_directory_keep_one_valid_chain(tmp_path: Path) -> None:
    first, second = _smoke(str(tmp_path), {}), _smoke(str(tmp_path), {})
    runs = [_finish(first), _finish(second)]
    [(path, index)] = index_documents(tmp_path)
    assert path.name == "index.json" and len(index["receipts"]) == 2
    assert sorted(e["run_id"] for e in index["receipts"]) == sorted(r["run_id"] for r in runs)
    assert index["receipts"][0]["prev_sha256"] is None and index["receipts"][1]["prev_sha256"]
    report = verify_receipts(tmp_path)
    assert report.ok, report.problems


def test_an_interrupted_run_is_published_under_the_run_id_its_staged_index_names(s3_env, tmp_path: Path,
                                                                                 capsys) -> None:
    result = run_smoke_on(tmp_path, only=["adapter_check"], html=False)
    store = RemoteStore(f"s3://{S3_BUCKET}/interrupted")
    assert store.publish(tmp_path / "empty-staging") == []  # nothing staged: nothing published
    uploaded = store.publish(tmp_path)  # no run id given
    assert uploaded[-2:] == [f"s3://{S3_BUCKET}/interrupted/index.d/{result.run_id}.json",
                             f"s3://{S3_BUCKET}/interrupted/index.html"]
    assert main(["receipts", "verify", f"s3://{S3_BUCKET}/interrupted", "--json"]) == 0


@pytest.mark.parametrize("command", [["receipts", "list"], ["receipts", "verify"], ["smoke", "--out"]])
def test_storage_errors_name_the_url_not_a_flag(s3_env, command: list[str], capsys) -> None:
    url = "s3://missing-bucket/x"
    assert main([*command, url, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error.startswith(f"{url}: cannot list the prefix") and "--out" not in error


def test_aws_endpoint_url_alone_reaches_the_s3_compatible_server(s3_env, monkeypatch, capsys) -> None:
    """As docs/ci/README.md says: one variable, AWS_ENDPOINT_URL, for papermill's resource and client alike."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    monkeypatch.delenv("BOTO3_ENDPOINT_URL")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_env["AWS_ENDPOINT_URL_S3"])
    env = {k: v for k, v in s3_env.items() if k not in ("AWS_ENDPOINT_URL_S3", "BOTO3_ENDPOINT_URL")}
    doc = _finish(_smoke(f"s3://{S3_BUCKET}/one-variable", env | {"AWS_ENDPOINT_URL": s3_env["AWS_ENDPOINT_URL_S3"]}))
    assert doc["verdict"] == "passed" and doc["receipts"][0]["path"].startswith(f"s3://{S3_BUCKET}/one-variable/")
    assert main(["receipts", "verify", f"s3://{S3_BUCKET}/one-variable", "--json"]) == 0
