"""The package is type-checked, not just marked ``py.typed``: mypy passes with the configuration in pyproject.toml
(--strict's flags on ``core`` and ``wire``, every def annotated elsewhere), that configuration can fail, and every
``type: ignore`` left in the package names its error code and says why."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from tests.helpers import ROOT

#: ``# type: ignore[code, ...]  # the reason``
IGNORE_WITH_REASON = re.compile(r"# type: ignore\[[a-z][a-z-]*(, [a-z][a-z-]*)*\]  # \S.*\S")


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=540)


def ignores_without_reason(source: str) -> list[str]:
    """The ``type: ignore`` comments of ``source`` that lack an error code or a reason (``line: comment``)."""
    bad = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and "type: ignore" in tok.string and not IGNORE_WITH_REASON.search(tok.string):
            bad.append(f"{tok.start[0]}: {tok.string}")
    return bad


@pytest.mark.timeout(600)  # a cold run checks ~150 modules: about 30 s on a loaded 2-core machine
def test_mypy_passes_on_the_package() -> None:
    proc = _mypy()  # files, flags and per-module overrides: [tool.mypy] in pyproject.toml
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout


@pytest.mark.timeout(300)
def test_core_and_wire_are_strict_and_the_rest_is_not(tmp_path: Path) -> None:
    """A bare generic (``list``) is an error under --strict's disallow_any_generics: in core and wire, not in kit."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    probe = "def count(items: list) -> int:\n    return len(items)\n"
    paths = []
    for layer in ("core", "wire", "kit"):
        pkg = tmp_path / "hermes_nb" / layer
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "probe.py").write_text(probe)
        paths.append(f"hermes_nb/{layer}/probe.py")
    (tmp_path / "hermes_nb" / "__init__.py").write_text("")
    proc = _mypy("--no-incremental", *paths, cwd=tmp_path)
    flagged = sorted(set(re.findall(r"^hermes_nb/(\w+)/probe\.py:\d+: error: Missing type arguments", proc.stdout,
                                    flags=re.M)))
    assert flagged == ["core", "wire"], proc.stdout


def test_every_type_ignore_in_the_package_has_a_code_and_a_reason() -> None:
    bad = {p.relative_to(ROOT).as_posix(): found for p in sorted((ROOT / "hermes_nb").rglob("*.py"))
           if (found := ignores_without_reason(p.read_text(encoding="utf-8")))}
    assert not bad, bad


@pytest.mark.parametrize("line, ok", [
    ("x = f()  # type: ignore[arg-type]  # the stub says int; it returns str\n", True),
    ("x = f()  # type: ignore[misc, valid-type]  # a base class chosen at import\n", True),
    ("x = f()  # type: ignore\n", False),  # no code
    ("x = f()  # type: ignore  # because\n", False),  # no code
    ("x = f()  # type: ignore[arg-type]\n", False),  # no reason
    ("x = f()  # type: ignore[arg-type]  #\n", False),  # an empty reason
    ("s = '# type: ignore'  # a string, not a comment\n", True),
])
def test_the_reason_check_tells_a_bare_ignore(line: str, ok: bool) -> None:
    assert (ignores_without_reason(line) == []) is ok
