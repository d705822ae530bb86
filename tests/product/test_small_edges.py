"""The small edges, each with its test: loopback however it is written, https to the proxy's
plain-http port, ``receipts list`` newest first (the clean build, no ``project.license`` table warning, is checked
on the wheel tests/product/test_wheel.py builds)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from hermes_nb.cli import main
from hermes_nb.core.facts import is_loopback_host, plain_http_warning
from tests.helpers import ROOT


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.255.0.9",
                                  "[::1]", "[::ffff:127.0.0.1]", "::ffff:7f00:1", "localhost", "a.localhost."])
def test_loopback_however_it_is_written(host: str) -> None:
    assert is_loopback_host(host)
    assert plain_http_warning(f"http://{host}:8645/v1") is None


@pytest.mark.parametrize("host", ["10.0.0.1", "1", "128.1", "2147483648", "::ffff:10.0.0.1", "example.com",
                                  "127.0.0.1.example.com", "0x7f.1.example", ""])
def test_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


@pytest.fixture
def plain_http_port():
    """A loopback port that answers plain HTTP (as the proxy does) to whatever it is sent."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


def test_https_to_a_plain_http_port_says_use_http(plain_http_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = f"https://127.0.0.1:{plain_http_port}/v1"
    assert main(["check", "--endpoint", endpoint, "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["state"] == "misconfigured"
    assert doc["hint"].endswith(f"use http://127.0.0.1:{plain_http_port}/v1"), doc
    from hermes_nb import HermesClient
    from hermes_nb.core.config import validate_config
    from hermes_nb.wire.reading import classify

    config = validate_config({"endpoint": endpoint, "model": "m", "request_timeout_ms": 10_000})
    with HermesClient(config) as client:
        outcome = classify(client.chat([{"role": "user", "content": "hi"}]), config)
    assert outcome.hint is not None and outcome.hint.endswith(f"use http://127.0.0.1:{plain_http_port}/v1")


def test_receipts_list_is_newest_first_as_the_readme_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = {"schema": "hermes-nb.receipts-index.v1", "receipts": [
        {"run_id": f"2026010{i}T000000Z-00000{i}", "notebook": "adapter_check", "verdict": "passed",
         "started_at": f"2026-01-0{i}T00:00:00.000Z", "path": f"r{i}/adapter_check.ipynb"} for i in (1, 2, 3)]}
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert main(["receipts", "list", str(tmp_path), "--json"]) == 0
    listed = [e["run_id"] for e in json.loads(capsys.readouterr().out)["receipts"]]
    assert listed == [f"2026010{i}T000000Z-00000{i}" for i in (3, 2, 1)]
    assert main(["receipts", "list", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2026-01-03") and lines[-1].startswith("2026-01-01")
    assert "newest first" in (ROOT / "README.md").read_text()
