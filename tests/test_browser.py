"""Checked in a real browser: JupyterLab with the probe console, and a receipt with its run index, in chromium.

Marker ``browser``; ``make test`` runs them when Debian's chromium (``/usr/bin/chromium``) is there, after
installing JupyterLab and Playwright for Python from ``requirements-browser.lock`` into ``.venv-browser`` (never a
browser download: Playwright launches the system chromium through ``executable_path``). The Playwright side
is ``tests/browser/drive.py``, run with ``.venv-browser``'s Python; it prints its observations as JSON.

JupyterLab runs on loopback with a random token, in throwaway Jupyter/JupyterLab/IPython directories, with a
private kernelspec bound to this interpreter (the project's ``.venv``, where hermes_nb is importable).
``HERMES_NB_UPDATE_SCREENSHOTS=1`` (``make screenshots``) copies the screenshots to ``docs/img/``.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("HERMES_NB_CHROMIUM", "/usr/bin/chromium"))
BVENV = ROOT / ".venv-browser"
DRIVER = Path(__file__).resolve().parent / "browser" / "drive.py"
#: read at import: the suite's autouse fixture clears HERMES_* variables before each test
UPDATE_SCREENSHOTS = os.environ.get("HERMES_NB_UPDATE_SCREENSHOTS") == "1"
KERNEL = "hermes-nb-browser"
PROMPT = "Explain in a few words why a streamed answer needs a Stop button."

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM} (Debian's chromium): browser tests skipped"),
    pytest.mark.skipif(not (BVENV / "bin" / "python").is_file(),
                       reason="no .venv-browser (make browser-venv): browser tests skipped"),
]


def _drive(config: dict, tmp_path: Path) -> dict:
    path = tmp_path / "drive.json"
    path.write_text(json.dumps({"chromium": str(CHROMIUM), **config}))
    proc = subprocess.run([str(BVENV / "bin" / "python"), str(DRIVER), str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _keep(shot: Path, name: str) -> None:
    assert shot.is_file() and shot.stat().st_size > 10_000, shot
    if UPDATE_SCREENSHOTS:
        shutil.copyfile(shot, ROOT / "docs" / "img" / name)


def _free_port() -> int:
    """jupyter server does not take port 0: bind one on loopback, free it, hand it over."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def jupyterlab(tmp_path: Path) -> Iterator[dict]:
    from hermes_nb.nbrun.kernels import KERNEL_ARGS, QUIET_ENV

    home = tmp_path / "jupyter"
    spec_dir = home / "path" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", *KERNEL_ARGS],
        "display_name": "Python (hermes-nb .venv)", "language": "python",
        "env": {**QUIET_ENV, "IPYTHONDIR": str(home / "ipython")},
    }))
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from hermes_nb import ProbeConsole\n"
        f"console = ProbeConsole(scenario=\"slow\", delay_s=0.5, prompt={PROMPT!r})\nconsole")]
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python (hermes-nb .venv)", "language": "python"}
    nbformat.write(nb, str(notebooks / "console.ipynb"))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_PATH": str(home / "path"), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_PLATFORM_DIRS": "1"}
    proc = subprocess.Popen(
        [str(BVENV / "bin" / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={notebooks}",
         "--LabApp.news_url=None", "--KernelSpecManager.ensure_native_kernel=False", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    log: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put("")  # EOF: the server is gone

    threading.Thread(target=read, daemon=True).start()
    try:
        while True:  # the server says when it listens; no polling of the port
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail("JupyterLab did not start within 60 s:\n" + "".join(log[-40:]))
            if not line:
                pytest.fail("JupyterLab exited:\n" + "".join(log[-40:]))
            if f"http://127.0.0.1:{port}/" in line:
                break
        yield {"url": f"http://127.0.0.1:{port}/", "token": token, "notebook": "console.ipynb", "log": log}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_console_streams_stops_and_records_history_in_jupyterlab(jupyterlab: dict, tmp_path: Path) -> None:
    from hermes_nb.kit.session import ConsoleSession

    shot = tmp_path / "probe-console.png"
    seen = _drive({"mode": "console", "url": jupyterlab["url"], "token": jupyterlab["token"],
                   "notebook": jupyterlab["notebook"], "screenshots": {"console": str(shot)}}, tmp_path)
    first, later = seen["lengths"]
    assert 0 < first < later, seen  # the text grew in the page while the stream ran
    assert seen["state_while_growing"] == "streaming…"
    assert seen["state_after_stop"] == "stopped: partial text kept"
    session = ConsoleSession()
    try:
        whole = session.send("", "m", "ok", "chat (streamed)", prompt=PROMPT)
        assert whole.wait(10)
    finally:
        session.close()
    kept = seen["text_after_stop"]
    assert later <= len(kept) < len(whole.text) and whole.text.startswith(kept)  # Stop kept the partial text
    assert "stopped" in seen["response"]
    assert seen["history"][0].replace("\xa0", " ").startswith("#1 POST chat (streamed) → 200 stopped")
    _keep(shot, "probe-console.png")


def test_receipt_and_run_index_in_the_browser(tmp_path: Path) -> None:
    from hermes_nb.nbrun.smoke import run_smoke
    from hermes_nb.nbrun.smoke_target import SmokeTarget

    result = run_smoke(SmokeTarget(), out_dir=tmp_path / "receipts")
    assert result.verdict == "passed"
    e2e = next(r for r in result.runs if r.name == "e2e_smoke")
    shots = {"receipt": str(tmp_path / "receipt.png"), "index": str(tmp_path / "receipt-index.png")}
    others = [str(r.receipt_path.with_suffix(".html")) for r in result.runs if r.name != "e2e_smoke"]
    seen = _drive({"mode": "receipt", "receipt": str(e2e.receipt_path.with_suffix(".html")), "others": others,
                   "index": str(tmp_path / "receipts" / "index.html"), "screenshots": shots}, tmp_path)
    assert seen["timelines"] >= 2 and seen["deltas"] >= 3  # header picture + the run cell's, with its deltas
    assert len(seen["digests"]) >= 3 and all(len(d) == 64 for d in seen["digests"])
    # on an 800 px page nothing runs past the body: the wire-format spike's wide route table included
    assert seen["overflow_px"] == {"e2e_smoke.html": 0, "wire_format_spike.html": 0, "adapter_check.html": 0,
                                   "index.html": 0}
    rows = seen["index_rows"]
    assert len(rows) == 3 and all("passed" in r for r in rows)
    assert sorted(r.split()[0] for r in rows) == ["adapter_check", "e2e_smoke", "wire_format_spike"]
    assert seen["followed_title"].endswith("receipt")  # the index links open the receipts
    _keep(Path(shots["receipt"]), "receipt.png")
    _keep(Path(shots["index"]), "receipt-index.png")
