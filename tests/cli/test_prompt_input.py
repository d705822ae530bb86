"""Prompt input is bounded and stored once.

``--prompt-file`` and ``--prompt -`` read at most ``--max-prompt-bytes`` (default just above the proxy's 10 MB
body cap): ``/dev/zero`` is refused at once, even under a 4 GB address-space cap. A run keeps the prompt in one
file, ``prompt.md``; every other record refers to it by digest and size, and ``--dry-run --json`` prints those,
not the text.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hermes_nb.cli import main
from hermes_nb.core.facts import MAX_PROMPT_BYTES, PROXY_MAX_REQUEST_BYTES
from hermes_nb.wire.client import HermesClient

GB = 1024**3


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "NOUS_"))}


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_is_refused_quickly_under_a_4_gb_address_space_cap(tmp_path: Path) -> None:
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({4 * GB}, {4 * GB}))\n"
            "from hermes_nb.cli.app import main\n"
            f"sys.exit(main(['run', '--prompt-file', '/dev/zero', '--root', {str(tmp_path)!r}, '--json']))\n")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["error"] == f"--prompt-file /dev/zero: prompt file is larger than {MAX_PROMPT_BYTES} bytes " \
                           "(the limit; raise it if you mean it)"
    assert "Traceback" not in proc.stderr and not (tmp_path / ".harness").exists()
    assert took < 20, took  # generous for a loaded machine; the read itself is ~10 MB (it used to read 24 GB)


def test_a_huge_limit_is_a_bound_not_an_allocation_under_a_3_gb_address_space_cap(tmp_path: Path) -> None:
    """``--max-prompt-bytes 4000000000`` and a 7-byte file: the 7 bytes are read (it used to ask for 4 GB in one
    read and end in MemoryError)."""
    prompt = tmp_path / "small.txt"
    prompt.write_bytes(b"7 bytes")
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({3 * GB}, {3 * GB}))\n"
            "from hermes_nb.cli.app import main\n"
            f"sys.exit(main(['run', '--prompt-file', {str(prompt)!r}, '--max-prompt-bytes', '4000000000',"
            f" '--root', {str(tmp_path)!r}, '--model', 'm', '--dry-run', '--json']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    planned = json.loads(proc.stdout)
    assert "\n\n7 bytes\n\n" in (Path(planned["run_dir"]) / "prompt.md").read_text()


@pytest.mark.parametrize("limit", ["0", "-1"])
@pytest.mark.parametrize("source", [["--prompt", "hi"], ["--prompt-file", "p.txt"], ["--prompt", "-"]],
                         ids=["inline", "file", "stdin"])
def test_the_limit_must_be_positive_whatever_the_source(tmp_path: Path, limit: str, source: list[str],
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.txt").write_text("hi")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hi")))  # a usage error: in-process suffices
    code = main(["run", *source, "--max-prompt-bytes", limit, "--root", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 2, err[-2000:]
    assert json.loads(out)["error"] == "--max-prompt-bytes: must be > 0"
    assert not (tmp_path / ".harness").exists()


def test_the_limit_is_just_above_the_proxy_body_cap_and_can_be_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert PROXY_MAX_REQUEST_BYTES < MAX_PROMPT_BYTES < 1.1 * PROXY_MAX_REQUEST_BYTES
    prompt = tmp_path / "p.txt"
    prompt.write_text("x" * 2000)
    code = main(["run", "--prompt-file", str(prompt), "--max-prompt-bytes", "1000", "--root", str(tmp_path), "--json"])
    assert code == 2 and "larger than 1000 bytes" in json.loads(capsys.readouterr().out)["error"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y" * 1001)))
    code = main(["run", "--prompt", "-", "--max-prompt-bytes", "1000", "--root", str(tmp_path), "--json"])
    assert code == 2 and "larger than 1000 bytes" in capsys.readouterr().out


def _records(run_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


def test_a_2_mb_prompt_is_held_whole_by_one_file_and_dry_run_json_is_small(tmp_path: Path) -> None:
    from hermes_nb.emulator import serve_emulator

    marker = "the end of a two megabyte prompt"
    prompt = tmp_path / "big.txt"
    prompt.write_text(("lorem ipsum dolor sit amet " * 80_000)[:2_000_000] + marker)
    base = [sys.executable, "-m", "hermes_nb.cli", "run", "--prompt-file", str(prompt), "--root", str(tmp_path),
            "--no-sandbox", "--model", "m", "--json"]
    with serve_emulator() as emu:
        dry = subprocess.run([*base, "--endpoint", emu.endpoint, "--dry-run"], capture_output=True, timeout=120,
                             env=_env())
        real = subprocess.run([*base, "--endpoint", emu.endpoint], capture_output=True, timeout=120, env=_env())
        sent = emu.requests[-1].json["messages"][-1]["content"]
    assert dry.returncode == 0 and real.returncode == 0, (dry.stderr[-2000:], real.stderr[-2000:])
    assert len(dry.stdout) < 20_000  # it used to print the prompt four times over
    planned = json.loads(dry.stdout)
    for run_dir in (Path(planned["run_dir"]), Path(json.loads(real.stdout)["run_dir"])):
        records = _records(run_dir)
        holding = [name for name, data in records.items() if marker.encode() in data]
        assert holding == ["prompt.md"], holding
        stored = records["prompt.md"]
        reference = f"<prompt.md: {len(stored)} bytes, sha256:{hashlib.sha256(stored).hexdigest()}>".encode()
        assert reference in records["request.json"] and reference in records["runtime-session.yaml"]
    assert planned["plan"]["prompt"] == {"file": "prompt.md", "bytes": len(stored),
                                         "sha256": hashlib.sha256(stored).hexdigest()}
    assert marker in sent and len(sent) > 2_000_000  # the proxy got the whole prompt


@pytest.mark.parametrize("obj", [
    {"model": "m", "messages": [{"role": "user", "content": "é\u2028\x1f\"\\ x" * 200_000}], "t": 0.1,
     "n": [1, None, True, 2**70]},
    {"messages": [{"role": "user", "content": "a" * (2 << 20)}, {"role": "user", "content": "b"}], "x": [[], {}]},
])
def test_a_big_body_is_sent_in_pieces_that_are_exactly_httpx_json(obj: dict) -> None:
    request = HermesClient("http://127.0.0.1:9/v1").build_request("POST", "/x", json=obj)
    expected = httpx.Request("POST", "http://127.0.0.1:9/x", json=obj).content
    pieces = list(request.stream)
    assert int(request.headers["content-length"]) == len(expected) and "transfer-encoding" not in request.headers
    assert max(len(p) for p in pieces) < 5 << 20 and b"".join(pieces) == expected == b"".join(request.stream)


def test_a_small_body_is_httpx_json_and_nan_is_refused() -> None:
    client = HermesClient("http://127.0.0.1:9/v1")
    obj = {"a": "é", "b": [1.5, 2**70]}
    assert client.build_request("POST", "/x", json=obj).content == httpx.Request("POST", "/", json=obj).content
    with pytest.raises(ValueError):
        client.build_request("POST", "/x", json={"temperature": float("nan")})
