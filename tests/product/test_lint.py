"""The code is linted: ``ruff check`` passes with the configuration in pyproject.toml ([tool.ruff]: the package, the
tests, the benchmarks and the scripts), and that configuration can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

RUFF = Path(sys.executable).with_name("ruff")


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    if not RUFF.is_file():
        pytest.fail(f"{RUFF} is missing: ruff is pinned in requirements.lock (make install)")
    return subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", *args], cwd=ROOT,
                          input=stdin, capture_output=True, text=True, timeout=120)


def test_ruff_passes_on_the_package_tests_benchmarks_and_scripts() -> None:
    proc = _ruff()  # what it checks and how: [tool.ruff] in pyproject.toml
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_ruff_looks_at_the_package_tests_benchmarks_and_scripts() -> None:
    proc = subprocess.run([str(RUFF), "check", "--show-files"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    files = {Path(line.strip()).relative_to(ROOT).parts[0] for line in proc.stdout.splitlines() if line.strip()}
    assert files == {"hermes_nb", "tests", "benchmarks", "scripts"}


@pytest.mark.parametrize("source, code", [
    ("import os\n", "F401"),  # unused import
    ("from typing import Callable\n\nf: Callable[[], None]\n", "UP035"),  # collections.abc
    ("x = 1\n" + "y = '" + "a" * 120 + "'\n", "E501"),  # past 120 columns
])
def test_ruff_fails_on_a_finding(source: str, code: str) -> None:
    proc = _ruff("--stdin-filename", "hermes_nb/core/_lint_probe.py", "-", stdin=source)
    assert proc.returncode == 1
    assert code in proc.stdout, proc.stdout
