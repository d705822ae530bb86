"""The layering is checked, not just drawn: the import-linter contracts hold, and they can fail; no module imports
another that imports it back (imports inside functions counted); few imports hide inside functions; module size is
reported."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from tests.helpers import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "LANG": "C.UTF-8"})


#: imports inside functions, the whole package: only true edges (an optional extra, a wing reached at its option)
FUNCTION_IMPORTS_MAX = 40


def import_cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in imports.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph("hermes_nb")  # every import statement, those inside functions too
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert "hermes_nb.rig.executable" in imports["hermes_nb.target"]  # a function-level edge is seen
    assert import_cycles(imports) == []
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_hide_inside_functions_only_at_true_edges() -> None:
    inside = []
    for path in sorted((ROOT / "hermes_nb").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        lines = {i.lineno for f in functions for i in ast.walk(f) if isinstance(i, (ast.Import, ast.ImportFrom))}
        inside += [f"{path.relative_to(ROOT)}:{n}" for n in sorted(lines)]
    assert len(inside) <= FUNCTION_IMPORTS_MAX, inside


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
    rows = re.findall(r"^\| (\d+) \| `([a-z]+)` \|", doc, flags=re.M)
    by_floor: dict[str, list[str]] = {}
    for floor, name in rows:
        by_floor.setdefault(floor, []).append(name)
    documented = [sorted(by_floor[f]) for f in sorted(by_floor, key=int, reverse=True)]
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
