"""Checked in a real browser: JupyterLab with the probe console, the magics, the guide, and receipts, in chromium.

Marker ``browser``; ``make test`` runs them when Debian's chromium (``/usr/bin/chromium``) is there, after
installing JupyterLab and Playwright for Python from ``requirements-browser.lock`` into ``.venv-browser`` (never a
browser download: Playwright launches the system chromium through ``executable_path``). The Playwright side
is ``tests/browser/drive.py`` (through ``tests.helpers.drive``), run with ``.venv-browser``'s Python; it prints
its observations as JSON.

One JupyterLab per module, on loopback with a random token, in throwaway Jupyter/JupyterLab/IPython
directories, with a private kernelspec (also under the name ``python3``, the shipped notebooks' kernel) bound
to this interpreter (the project's ``.venv``, where hermes_nb is importable). Each test writes its own
notebook and shuts its kernels down. ``HERMES_NB_UPDATE_SCREENSHOTS=1`` (``make screenshots``) copies the
screenshots to ``docs/img/``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.helpers import BROWSER_MARKS, BVENV, ROOT, drive, free_port, run_smoke_on

#: read at import: the suite's autouse fixture clears HERMES_* variables before each test
UPDATE_SCREENSHOTS = os.environ.get("HERMES_NB_UPDATE_SCREENSHOTS") == "1"
KERNEL = "hermes-nb-browser"
PROMPT = "Explain in a few words why a streamed answer needs a Stop button."
#: WCAG AA for normal text
AA = 4.5
CANARY = "sk-canary-browser-0123456789abcdef"

pytestmark = BROWSER_MARKS


def _keep(shot: Path, name: str | None) -> None:
    """The screenshot was taken; with HERMES_NB_UPDATE_SCREENSHOTS=1 it becomes ``docs/img/<name>``."""
    assert shot.is_file() and shot.stat().st_size > 10_000, shot
    if UPDATE_SCREENSHOTS and name is not None:
        shutil.copyfile(shot, ROOT / "docs" / "img" / name)


def _closed_port() -> int:
    return free_port()  # freed at once: nothing listens there


def _notebook(lab: dict, name: str, *sources: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python (hermes-nb .venv)", "language": "python"}
    nbformat.write(nb, str(lab["root"] / name))
    return name


def _lab_env(home: Path) -> dict[str, str]:
    """This environment without HERMES_*/NOUS_*/proxy variables (module scope: the autouse fixture has not run)."""
    drop = ("HERMES_", "NOUS_")
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(drop) and k.upper() not in {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"}}
    return {**env, "HERMES_HOME": str(home / "hermes-home"), "JUPYTER_PATH": str(home / "path"),
            "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "JUPYTER_PLATFORM_DIRS": "1"}


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    from hermes_nb.nbrun.smoke import KERNEL_ARGV, QUIET_ENV

    home = tmp_path_factory.mktemp("jupyter")
    (home / "hermes-home").mkdir()
    for name, display in ((KERNEL, "Python (hermes-nb .venv)"), ("python3", "Python 3 (ipykernel)")):
        spec_dir = home / "path" / "kernels" / name
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, *KERNEL_ARGV],
            "display_name": display, "language": "python",
            "env": {**QUIET_ENV, "IPYTHONDIR": str(home / "ipython")},
        }))
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    root = home / "root"
    root.mkdir()
    port, token = free_port(), secrets.token_hex(16)  # jupyter server does not take port 0
    proc = subprocess.Popen(
        [str(BVENV / "bin" / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=None", "--LabApp.expose_app_in_browser=True",
         "--KernelSpecManager.ensure_native_kernel=False", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_lab_env(home), cwd=root)
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
        yield {"url": f"http://127.0.0.1:{port}/", "token": token, "root": root, "log": log}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _lab(lab: dict, mode: str, notebook: str, **extra: object) -> dict:
    return {"mode": mode, "url": lab["url"], "token": lab["token"], "notebook": notebook, **extra}


# --------------------------------------------------------------------------- the console: stream, Stop, history

def test_console_streams_stops_and_records_history_in_jupyterlab(jupyterlab: dict, tmp_path: Path) -> None:
    from hermes_nb.kit import ConsoleSession

    nb = _notebook(jupyterlab, "console.ipynb", "from hermes_nb import ProbeConsole\n"
                   f"console = ProbeConsole(scenario=\"slow\", delay_s=0.5, prompt={PROMPT!r})\nconsole")
    shot = tmp_path / "probe-console.png"
    seen = drive(_lab(jupyterlab, "console", nb, screenshots={"console": str(shot)}), tmp_path)
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
    _keep(shot, None)  # docs/img shows the themes test's pictures


# --------------------------------------------------------------------------- themes: contrast measured

THEMED = (
    "from hermes_nb import ProbeConsole\n"
    "console = ProbeConsole(scenario=\"ok\", prompt=\"Say **hello** and list `two` things\")\nconsole",
    "%load_ext hermes_nb",
    "%%hermes_chat\nSay **hello** in Markdown",
    "%%hermes_chat --scenario auth-stale\nThis one is blocked",
    "%hermes_check",
    "%hermes_probe --compare seed",
)


def test_every_text_reads_at_4_5_to_1_in_the_light_and_dark_themes(jupyterlab: dict, tmp_path: Path) -> None:
    """The dark theme's answer box was a light box with white text (1.06:1)."""
    nb = _notebook(jupyterlab, "themes.ipynb", *THEMED)
    shots = {"JupyterLab Light": str(tmp_path / "probe-console.png"),
             "JupyterLab Dark": str(tmp_path / "probe-console-dark.png")}
    seen = drive(_lab(jupyterlab, "themes", nb, screenshots=shots), tmp_path)
    for theme in shots:
        measured = seen[theme]
        assert measured["texts"] > 50, measured  # the console, the chat answers, the reprs: all measured
        assert measured["min_ratio"] >= AA, (theme, measured["worst"])
        assert measured["answer_ratio"] >= AA, (theme, measured)  # the console's answer box itself
    assert all(seen[t]["label_overlaps"] == [] for t in shots), seen  # timeline labels in console and magics
    assert all(seen[t]["split_headers"] == [] for t in shots), seen  # table headers break between words only
    print(json.dumps({t: {k: seen[t][k] for k in ("min_ratio", "answer_ratio", "texts", "worst")} for t in shots}))
    _keep(Path(shots["JupyterLab Light"]), "probe-console.png")
    _keep(Path(shots["JupyterLab Dark"]), "probe-console-dark.png")


# --------------------------------------------------------------------------- keyboard, usage, markdown, copy, models

def test_keyboard_sends_and_stops_usage_and_markdown_show_and_copy_never_carries_the_token(
        jupyterlab: dict, tmp_path: Path) -> None:
    """Ctrl+Enter / Shift+Enter send, Enter is a newline, Escape stops; token usage after an
    answer; the answer rendered as Markdown without running what it carries; copy buttons; the model picker."""
    hostile = '**bold** <img src=x onerror="window.__hermes_pwned=1"> [x](javascript:window.__hermes_pwned=2)'
    nb = _notebook(jupyterlab, "keys.ipynb",
                   "import os\nos.environ['HERMES_NB_AUTH_TOKEN'] = " + repr(CANARY) + "\n"
                   "from hermes_nb import ProbeConsole\n"
                   f"console = ProbeConsole(scenario=\"slow\", delay_s=0.3, prompt={hostile!r})\nconsole")
    seen = drive(_lab(jupyterlab, "keyboard", nb), tmp_path)
    assert seen["enter_kept_newline"] and seen["state_after_enter"] == "idle", seen  # Enter: a newline, no send
    assert seen["ctrl_enter_state"] in ("sending…", "streaming…"), seen
    assert seen["escape_state"] == "stopped: partial text kept", seen
    assert seen["shift_enter_final"].startswith("done"), seen
    assert "Ctrl+Enter" in seen["hint"] and "Shift+Enter" in seen["hint"] and "Esc" in seen["hint"]
    assert re.search(r"\d+ prompt \+ \d+ completion = \d+ tokens · [\d.]+ tokens/s", seen["usage"]), seen["usage"]
    assert seen["bold"] == ["bold"] and seen["pwned"] is None  # rendered, and nothing from the answer ran
    assert "You asked: \"**bold** <img src=x" in seen["raw_view"]  # the raw view: the text as sent
    assert seen["copied_answer"] == seen["answer_text"] and seen["answer_text"]
    curl, py_httpx, py_openai = seen["copied_curl"], seen["copied_httpx"], seen["copied_openai"]
    assert curl.startswith("curl ") and "$HERMES_NB_AUTH_TOKEN" in curl
    assert "httpx" in py_httpx and 'os.environ["HERMES_NB_AUTH_TOKEN"]' in py_httpx
    assert "OpenAI(" in py_openai and "HERMES_NB_AUTH_TOKEN" in py_openai
    assert not any(CANARY in s for s in (curl, py_httpx, py_openai, seen["page_text"]))
    assert seen["model_options"] and "no-such-model" not in seen["model_options"]
    assert "not listed" in seen["model_flag"], seen["model_flag"]


# --------------------------------------------------------------------------- no stuck states

def test_ten_failing_sends_in_a_row_leave_no_sending_and_stop_disabled(jupyterlab: dict, tmp_path: Path) -> None:
    """A request that fails at once sometimes left "sending…" (2 of 10 against a closed port)."""
    nb = _notebook(jupyterlab, "failures.ipynb", "from hermes_nb import ProbeConsole\n"
                   f"console = ProbeConsole(endpoint='http://127.0.0.1:{_closed_port()}/v1', route='chat')\nconsole")
    seen = drive(_lab(jupyterlab, "failures", nb, rounds=10), tmp_path)
    # a closed port is "unreachable": blocked (the operator starts the proxy), and the status says so each time
    assert seen["states"] == ["blocked: unreachable"] * 10, seen
    assert seen["stop_disabled"] is True and seen["send_disabled"] is False
    assert seen["history"] == 10 and "unreachable" in seen["response"] and "hermes proxy start" in seen["response"]


# --------------------------------------------------------------------------- narrow page

def test_nothing_is_clipped_or_truncated_at_800_px(jupyterlab: dict, tmp_path: Path) -> None:
    nb = _notebook(jupyterlab, "narrow.ipynb", "from hermes_nb import ProbeConsole\n"
                   "console = ProbeConsole()\nconsole")
    seen = drive(_lab(jupyterlab, "narrow", nb, width=800, screenshot=str(tmp_path / "narrow.png")), tmp_path)
    assert seen["controls"] > 15, seen
    assert seen["clipped"] == [] and seen["truncated"] == [], seen
    assert seen["split_headers"] == [] and seen["label_overlaps"] == [], seen  # narrow: words stay whole


# --------------------------------------------------------------------------- kernel restart

def test_after_a_kernel_restart_the_console_says_to_run_the_cell_again(jupyterlab: dict, tmp_path: Path) -> None:
    nb = _notebook(jupyterlab, "restart.ipynb", "from hermes_nb import ProbeConsole\n"
                   "console = ProbeConsole()\nconsole")
    seen = drive(_lab(jupyterlab, "restart", nb), tmp_path)
    assert "run this cell again" in seen["hint"], seen


# --------------------------------------------------------------------------- the guide, from the wheel's export

def test_the_exported_guide_reads_well_unrun_and_run_all_leaves_a_working_console(
        jupyterlab: dict, tmp_path: Path) -> None:
    from hermes_nb.cli import main

    assert main(["notebooks", "export", str(jupyterlab["root"] / "guide")]) == 0
    seen = drive(_lab(jupyterlab, "guide", "guide/probe_console.ipynb"), tmp_path, timeout=300)
    unrun = seen["unrun_first_output"]
    assert "VBox(children" not in unrun and "ProbeConsole" in unrun, unrun
    assert " s / s / s" not in seen["unrun_text"] and "<n.nnn> s" in seen["unrun_text"]
    assert seen["errors"] == [] and seen["executed"] == seen["code_cells"], seen
    assert seen["consoles"] >= 1 and seen["final_state"].startswith("done"), seen


# --------------------------------------------------------------------------- receipts

def _measured_pages(seen: dict) -> None:
    for scheme in ("light", "dark"):
        for page, measured in seen["contrast"][scheme].items():
            assert measured["min_ratio"] >= AA, (scheme, page, measured["worst"])
    print(json.dumps({scheme: {page: round(m["min_ratio"], 2) for page, m in pages.items()}
                      for scheme, pages in seen["contrast"].items()}))


def test_receipt_and_run_index_in_the_browser(tmp_path: Path) -> None:

    result = run_smoke_on(tmp_path / "receipts")
    assert result.verdict == "passed"
    e2e = next(r for r in result.runs if r.name == "e2e_smoke")
    shots = {"receipt": str(tmp_path / "receipt.png"), "index": str(tmp_path / "receipt-index.png"),
             "receipt_dark": str(tmp_path / "receipt-dark.png")}
    others = [str(r.receipt_path.with_suffix(".html")) for r in result.runs if r.name != "e2e_smoke"]
    seen = drive({"mode": "receipt", "receipt": str(e2e.receipt_path.with_suffix(".html")), "others": others,
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
    assert re.search(r"\d+ prompt \+ \d+ completion = \d+ tokens", seen["usage"]), seen["usage"]
    _measured_pages(seen)  # the receipt pages follow the reader's light or dark preference, readable in both
    assert seen["label_overlaps"] == [] and seen["split_headers"] == [], seen
    _keep(Path(shots["receipt"]), "receipt.png")
    _keep(Path(shots["receipt_dark"]), "receipt-dark.png")
    _keep(Path(shots["index"]), "receipt-index.png")


def test_index_html_links_work_from_jupyterlabs_file_browser(jupyterlab: dict, tmp_path: Path) -> None:
    """Opened inside JupyterLab, index.html's links gave 403 "Blocking request from unknown origin"."""

    result = run_smoke_on(jupyterlab["root"] / "receipts", only=["adapter_check"])
    assert result.verdict == "passed"
    seen = drive(_lab(jupyterlab, "index_in_lab", "receipts/index.html"), tmp_path)
    assert "403" not in seen["followed_text"] and "Blocking request" not in seen["followed_text"], seen
    assert seen["followed_title"].endswith("receipt"), seen
    assert "Trust HTML" in seen["untrusted_note"], seen  # before trusting, the page says what the links need
