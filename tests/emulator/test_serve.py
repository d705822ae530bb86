"""serve_emulator() life cycle, the pytest fixtures, the foreground CLI, and the emulator in a running kernel."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hermes_nb.cli import main
from hermes_nb.emulator import SCENARIO_HEADER, EmulatorHandle, serve_emulator
from tests.helpers import ROOT

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_handle_interface_and_clean_close() -> None:
    emu = serve_emulator(profile="upstream", scenario="ok", seed=3)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", emu.endpoint)
        assert emu == emu.endpoint and emu.base_url == emu.endpoint[: -len("/v1")] and emu.port > 0
        assert (emu.profile, emu.scenario, emu.seed) == ("upstream", "ok", 3) and emu.running
        assert "upstream" in repr(emu)
        assert emu.requests == []
        httpx.get(emu.endpoint + "/models", trust_env=False)
        assert [r.path for r in emu.wait_for_requests(1)] == ["/v1/models"]
        emu.clear()
        assert emu.requests == []
    finally:
        emu.close()
    emu.close()  # idempotent
    assert not emu.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(emu.endpoint + "/models", trust_env=False)


def test_busy_port_raises_oserror() -> None:
    with serve_emulator() as emu, pytest.raises(OSError, match="could not listen"):
        serve_emulator(port=emu.port)


def test_stalled_stream_does_not_block_shutdown() -> None:
    emu = serve_emulator(profile="upstream", scenario="stall")
    got_text = threading.Event()
    outcome: dict[str, str] = {}

    def client() -> None:
        try:
            with httpx.Client(trust_env=False, timeout=60) as http:
                with http.stream("POST", emu.endpoint + "/chat/completions", json=CHAT) as r:
                    for _ in r.iter_raw():
                        got_text.set()
            outcome["end"] = "clean"
        except httpx.TransportError as exc:
            outcome["end"] = type(exc).__name__

    thread = threading.Thread(target=client)
    thread.start()
    assert got_text.wait(10)
    emu.close()  # must end the stalled handler instead of waiting for the client
    thread.join(10)
    assert not thread.is_alive() and not emu.running
    assert outcome["end"] == "RemoteProtocolError"  # the chunked body never completed


@pytest.mark.hermes_emulator(profile="seed", scenario="rate-limited")
def test_fixture_with_marker(hermes_emulator: EmulatorHandle) -> None:
    assert (hermes_emulator.profile, hermes_emulator.scenario) == ("seed", "rate-limited")
    r = httpx.get(hermes_emulator.endpoint + "/models", headers={"Authorization": "Bearer x"}, trust_env=False)
    assert r.status_code == 429


@pytest.mark.parametrize("hermes_emulator", ["auth-stale", {"profile": "upstream", "seed": 5}], indirect=True)
def test_fixture_indirect_param(hermes_emulator: EmulatorHandle) -> None:
    status = httpx.get(hermes_emulator.endpoint + "/models", trust_env=False).status_code
    assert status == (401 if hermes_emulator.scenario == "auth-stale" else 200)


def test_fixture_default_and_factory(hermes_emulator: EmulatorHandle,
                                     hermes_emulator_factory: Callable[..., EmulatorHandle]) -> None:
    assert (hermes_emulator.profile, hermes_emulator.scenario, hermes_emulator.seed) == ("hermes-agent", "ok", 0)
    other = hermes_emulator_factory(profile="upstream")
    assert other.port != hermes_emulator.port and other.running


def test_the_pytest_plugin_imports_without_aiohttp() -> None:
    """The plugin loads in every pytest run of an environment that has hermes-nb: it starts and imports nothing."""
    code = "import sys, hermes_nb.testing; print('aiohttp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


# --------------------------------------------------------------------------- CLI


def _start_cli(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "emulator", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_endpoint_first_logs_requests_and_stops_cleanly(sig: signal.Signals) -> None:
    proc, first = _start_cli("--seed", "3", "--models", "a,b", "--scenario", "no-sentinel")
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", first), first
        models = httpx.get(first + "/models", trust_env=False).json()
        assert [m["id"] for m in models["data"]] == ["a", "b"]
        r = httpx.post(first + "/chat/completions", json=CHAT, headers={"Authorization": "Bearer sk-canary-77aa88bb99"},
                       trust_env=False)
        assert "uh-runtime-final-message" not in r.text
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert out == ""  # nothing after the endpoint line
    lines = [line for line in err.splitlines() if "-> " in line]
    assert len(lines) == 2 and "GET /v1/models -> 200" in lines[0] and "scenario=no-sentinel" in lines[1]
    assert "sk-canary-77aa88bb99" not in err


def test_cli_json_prints_one_object() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_nb.cli", "emulator", "--port", "0", "--json",
                             "--profile", "upstream"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None
        lines = []
        while not lines or lines[-1] != "}":
            lines.append(proc.stdout.readline().rstrip("\n"))
        doc = json.loads("\n".join(lines))
        assert doc["profile"] == "upstream" and doc["endpoint"] == doc["base_url"] + "/v1"
        assert httpx.get(doc["endpoint"] + "/models", trust_env=False).status_code == 200
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and out == ""


@pytest.mark.parametrize("argv,needle", [
    (["--host", "0.0.0.0"], "loopback only"),
    (["--host", "192.168.1.5"], "loopback only"),
    (["--port", "70000"], "65535"),
    (["--models", " , "], "at least one model"),
    (["--scenario", "nope"], "unknown emulator scenario"),
    (["--profile", "upstream", "--scenario", "upstream-timeout"], "need a proxy profile"),
])
def test_cli_usage_errors_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulator", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_cli_busy_port_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert main(["emulator", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


# --------------------------------------------------------------------------- inside a Jupyter kernel


def test_serve_inside_a_running_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    cells = [
        "import asyncio, sys\nprint(sys.executable)\nprint(asyncio.get_event_loop().is_running())",
        "import httpx\nfrom hermes_nb.emulator import serve_emulator\nemu = serve_emulator(seed=1)\n"
        f"r = httpx.post(emu.endpoint + '/chat/completions', json={CHAT!r}, "
        f"headers={{'{SCENARIO_HEADER}': 'ok'}}, trust_env=False)\n"
        "print(r.status_code, r.text.rstrip().endswith('data: [DONE]'))",
        "with serve_emulator(profile='upstream') as other:\n"
        "    print(httpx.get(other.endpoint + '/models').status_code)\n"
        "emu.close()\nprint(emu.running, other.running)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    NotebookClient(nb, kernel_name="python3", timeout=60,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    outputs = ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream") for cell in nb.cells]
    executable, loop_running = outputs[0].split()
    assert Path(executable).resolve() == Path(sys.executable).resolve()  # the kernel runs this environment
    assert loop_running == "True"  # the kernel's main thread has a running loop; serve_emulator() still works
    assert outputs[1].split() == ["200", "True"]
    assert outputs[2].split() == ["200", "False", "False"]


def test_python_dash_m_runs_the_same_command() -> None:
    out = subprocess.run([sys.executable, "-m", "hermes_nb.emulator", "--host", "10.0.0.1"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "loopback only" in out.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "example.com"])
def test_serve_refuses_a_non_loopback_host(host: str) -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        serve_emulator(host=host)


def test_cli_refuses_a_non_loopback_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emulator", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "loopback only" in capsys.readouterr().err
