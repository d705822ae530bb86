"""The layering is checked, not just drawn: the import-linter contracts hold, and they can fail; module size is
reported."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "LANG": "C.UTF-8"})


def test_the_contracts_hold() -> None:
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "4 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("core/facts.py", "import hermes_nb.wire.sse", "Layers"),
    ("proxy/probe.py", "import hermes_nb.harness.run", "Layers"),
    ("nbrun/smoke.py", "import hermes_nb.kit.job", "Layers"),
    ("receipts/verify.py", "import hermes_nb.cli.app", "The CLI is imported by nobody"),
    ("emulator/app.py", "import hermes_nb.wire.client", "The emulator never imports the client"),
    ("load/report.py", "import hermes_nb.load.views", "The load wing"),
])
def test_a_forbidden_import_breaks_a_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copytree(ROOT / "hermes_nb", tmp_path / "hermes_nb", ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "hermes_nb" / module
    target.write_text(target.read_text() + f"\n{line}  # a forbidden import\n")
    proc = _lint(tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert re.search(rf"{re.escape(contract)}[^\n]*(\n[^\n]*)?BROKEN", proc.stdout), proc.stdout[-3000:]


def test_the_layers_doc_and_the_contract_name_the_same_layers_in_the_same_order() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in config if c["type"] == "layers")["layers"]
    contract = [sorted(part.strip().removeprefix("hermes_nb.") for part in layer.split("|")) for layer in layers]
    doc = (ROOT / "docs/architecture/layers.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| `([a-z]+)` \|", doc, flags=re.M)
    by_floor: dict[str, list[str]] = {}
    for floor, name in rows:
        by_floor.setdefault(floor, []).append(name)
    documented = [sorted(by_floor[f]) for f in sorted(by_floor, reverse=True)]
    assert documented == contract


def test_the_size_report_lists_modules_over_the_flag_and_never_fails(tmp_path: Path) -> None:
    """Module size is a review flag (scripts/module_sizes.py, ``make sizes``), not a rule a test enforces."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "long.py").write_text("x = 1\n" * 401)
    (package / "at_the_mark.py").write_text("x = 1\n" * 400)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "cached.py").write_text("x = 1\n" * 900)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "module_sizes.py"), "--package", str(package)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "1 of 2 modules over 400 lines (a review flag: one job each? never inline to fit)", "   401  pkg/sub/long.py"]
