"""What several test modules share (imported as ``tests.helpers``; test modules never import each other).

Fixtures that several folders use live in ``tests/conftest.py``; plain functions and paths live here.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.core.facts import SENTINEL_TAG

#: the checkout: README.md, docs/, notebooks/, the side venvs
ROOT = Path(__file__).resolve().parent.parent
#: the JUnit schema CI systems read (Jenkins' junit-10.xsd; its origin: docs/ci/README.md)
JUNIT_XSD = ROOT / "tests" / "data" / "junit-10.xsd"
#: the bucket the S3 fixtures (tests/conftest.py: ``moto_url``, ``s3_env``) create on the loopback server
S3_BUCKET = "receipts"


def wrap_final_message(summary: str) -> str:
    """A sentinel block holding ``summary`` (trimmed), ending with a newline, as an agent writes it."""
    return f"```{SENTINEL_TAG}\n{summary.strip()}\n```\n"

# ------------------------------------------------------------------ loopback

def free_port() -> int:
    """A loopback port nothing listens on (bound, then freed at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve nothing (no query leaves the machine: tests use loopback only)."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)


# ------------------------------------------------------------------ the real proxy's releases (side venvs)

#: release → (its executable, the make target that builds its venv); each release lives in its own side venv,
#: built from a lock file by the Makefile (``make rig-venv``, ``make release-venvs``)
RELEASES: dict[str, tuple[Path, str]] = {
    "0.19": (ROOT / ".venv-hermes" / "bin" / "hermes", "make rig-venv"),
    "iot-0.22": (ROOT / ".venv-hermes-iot-0.22" / "bin" / "hermes", "make release-venvs"),
    "axisrow": (ROOT / ".venv-hermes-axisrow" / "bin" / "hermesx", "make release-venvs"),
}


def release_bin(name: str) -> Path:
    """The executable of a release, or a skip naming the make target that builds it."""
    path, target = RELEASES[name]
    if not path.is_file():
        pytest.skip(f"no {path.relative_to(ROOT)}: run `{target}`")
    return path


# ------------------------------------------------------------------ the browser (Playwright in .venv-browser)

CHROMIUM = Path(os.environ.get("HERMES_NB_CHROMIUM", "/usr/bin/chromium"))
BVENV = ROOT / ".venv-browser"
#: the Playwright side, run with .venv-browser's Python; it prints its observations as JSON
DRIVER = ROOT / "tests" / "browser" / "drive.py"
#: marks for every browser test: skipped with a reason without chromium or .venv-browser
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no {CHROMIUM} (Debian's chromium): browser tests skipped"),
    pytest.mark.skipif(not (BVENV / "bin" / "python").is_file(),
                       reason="no .venv-browser (make browser-venv): browser tests skipped"),
]


def needs_browser(test: Any) -> Any:
    """One browser test in a module of others (a whole module: ``pytestmark = BROWSER_MARKS``)."""
    for mark in reversed(BROWSER_MARKS):
        test = mark(test)
    return test


def drive(config: dict, tmp_path: Path, timeout: float = 240) -> dict:
    """Run ``tests/browser/drive.py`` on ``config`` (one mode and its inputs); what it saw, as a dict."""
    path = tmp_path / "drive.json"
    path.write_text(json.dumps({"chromium": str(CHROMIUM), **config}))
    proc = subprocess.run([str(BVENV / "bin" / "python"), str(DRIVER), str(path)], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def run_smoke_on(out_dir: Path, *, endpoint: str | None = None, model: str | None = None,
                 secrets: tuple[str, ...] | list[str] = (), environ: dict[str, str] | None = None,
                 **options: Any) -> Any:
    """:func:`hermes_nb.nbrun.smoke.run_smoke` against the embedded emulator (or ``endpoint``), the target
    established the way ``hermes-nb smoke`` establishes it (once, before the notebooks)."""
    from contextlib import ExitStack

    from hermes_nb.core.resolve import resolve_runtime_config
    from hermes_nb.nbrun.smoke import run_smoke
    from hermes_nb.target import establish

    config = resolve_runtime_config(environ={} if environ is None else environ, endpoint=endpoint, model=model)
    with ExitStack() as stack:
        target, aimed = establish(config, stack, ask_emulator=True)
        return run_smoke(target, aimed, out_dir=Path(out_dir), secrets=list(secrets), **options)
