"""The package is the product: a wheel installed into a fresh venv, outside the checkout, runs every command.

The wheel is built from a copy of the tracked sources (so a file that only the checkout has cannot
help), installed with its dependencies at the pinned versions into a new venv, and every command is
run from an empty directory with a clean environment: nothing can be found through the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes_nb.core.facts import LOAD_NOTEBOOK, NOTEBOOKS, SHIPPED_NOTEBOOKS, TEMPLATED_NOTEBOOKS
from tests.helpers import ROOT

pytestmark = pytest.mark.timeout(600)


@dataclass
class Installed:
    wheel: Path
    bin: Path
    cwd: Path
    env: dict[str, str]
    build_log: str  # what building the wheel printed

    def run(self, *args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(self.bin / "hermes-nb"), *args], cwd=self.cwd, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if check:
            assert proc.returncode == 0, f"hermes-nb {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        return proc

    def json(self, *args: str, **kw: object) -> dict:
        return json.loads(self.run(*args, "--json", **kw).stdout)  # type: ignore[arg-type]


def _sources(dest: Path) -> Path:
    """The files a build needs (what git tracks or would track), copied out of the checkout."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "pyproject.toml",
                             "README.md", "hermes_nb"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    for rel in listed:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    return dest


#: make install's pinned uv: builds, makes the venv and installs from its cache in seconds (pip: about a minute)
UV = ROOT / ".tools" / "bin" / "uv"


def _build_and_install(src: Path, dist: Path, venv: Path) -> tuple[Path, str]:
    """The wheel built from ``src`` (no isolation: the build backend is this venv's) and what the build printed,
    then installed with its dependencies at the versions the project pins into a new venv at ``venv``; pip when uv
    is not there."""
    def sh(*args: str | Path) -> str:
        done = subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, timeout=600)
        return done.stdout + done.stderr

    if UV.is_file():
        log = sh(UV, "build", "--wheel", "--no-build-isolation", "--python", sys.executable, "-o", dist, src)
        wheel = next(dist.glob("hermes_nb-*.whl"))
        sh(UV, "venv", "-q", "--python", sys.executable, venv)
        sh(UV, "pip", "install", "-q", "--python", venv / "bin" / "python", "-c", ROOT / "requirements.lock", wheel)
        return wheel, log
    log = sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", "-w", dist, src)
    wheel = next(dist.glob("hermes_nb-*.whl"))
    sh(sys.executable, "-m", "venv", venv)
    sh(venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c",
       ROOT / "requirements.lock", wheel)
    return wheel, log


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    venv = base / "venv"
    wheel, log = _build_and_install(_sources(base / "src"), base / "dist", venv)
    empty = base / "empty"
    empty.mkdir()
    home = base / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    yield Installed(wheel, venv / "bin", empty, env, log)
    shutil.rmtree(venv, ignore_errors=True)  # ~120 MB, on tmpfs (tests/conftest.py): the wheel itself is kept


def test_the_build_has_no_license_table_warning(installed: Installed) -> None:
    """``license = "MIT"`` (an SPDX expression) with a setuptools that reads it, pinned; no deprecation warning."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in project["build-system"]["requires"])
    assert "running bdist_wheel" in installed.build_log  # the backend's output is there: the check can fail
    assert "project.license" not in installed.build_log, installed.build_log[-3000:]
    assert "SetuptoolsDeprecationWarning" not in installed.build_log, installed.build_log[-3000:]


def test_the_wheel_ships_the_notebooks_contracts_and_sanitize_rules(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for name in SHIPPED_NOTEBOOKS:
        assert f"hermes_nb/data/notebooks/{name}.ipynb" in names
    assert {"hermes_nb/data/contracts/seed.json", "hermes_nb/data/contracts/hermes-agent-0.19.0.json",
            "hermes_nb/data/nbval-sanitize.cfg", "hermes_nb/py.typed",
            "hermes_nb/data/pins/hermes-agent-0.19.0.txt"} <= names  # hermes-nb matrix installs 0.19.0 from it
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed.wheel).read(entry_points).decode()
    assert "hermes-nb = hermes_nb.cli:main" in text
    # no plug-in of ours into papermill or jupyter_client: they are used as they are
    assert "papermill" not in text and "jupyter_client" not in text


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    out = subprocess.run([str(installed.bin / "python"), "-c", "import hermes_nb; print(hermes_nb.__file__)"],
                         cwd=installed.cwd, env=installed.env, capture_output=True, text=True, check=True)
    path = Path(out.stdout.strip())
    assert installed.bin.parent in path.parents and ROOT not in path.parents


def test_smoke_from_an_empty_directory(installed: Installed) -> None:
    doc = installed.json("smoke", "--out", "receipts")
    assert doc["verdict"] == "passed" and doc["target_kind"] == "emulator"
    assert [r["notebook"] for r in doc["receipts"]] == list(NOTEBOOKS)
    assert all(r["verdict"] == "passed" for r in doc["receipts"])
    assert installed.json("receipts", "verify", "receipts")["ok"] is True
    receipt = json.loads(next((installed.cwd / "receipts").rglob("e2e_smoke.receipt.json")).read_text())
    assert receipt["receipt"]["template"]["path"] == "hermes_nb/data/notebooks/e2e_smoke.ipynb"


def test_probe_compares_with_the_shipped_contracts_against_the_emulator(installed: Installed) -> None:
    for profile, contract in (("seed", "seed"), ("hermes-agent", "hermes-agent-0.19.0")):
        proc = subprocess.Popen([str(installed.bin / "hermes-nb"), "emulator", "--port", "0", "--profile", profile],
                                cwd=installed.cwd, env=installed.env, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            endpoint = proc.stdout.readline().strip()
            assert endpoint.startswith("http://127.0.0.1:")
            report = installed.json("probe", "--endpoint", endpoint, "--compare", contract)
            assert report["drift"] == [], (contract, report["drift"])
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_notebooks_list_export_and_refresh(installed: Installed) -> None:
    listed = installed.json("notebooks", "list")["notebooks"]
    # the three the smoke runs, the load receipt's, and the guide (it was missing from the wheel and the
    # export)
    assert [(n["name"], n["kind"]) for n in listed] == (
        [(n, "smoke") for n in NOTEBOOKS] + [("load", "load"), ("probe_console", "guide")])
    assert [n["name"] for n in listed] == list(SHIPPED_NOTEBOOKS)
    assert all(installed.bin.parent in Path(n["path"]).parents for n in listed)
    installed.run("notebooks", "export", "exported")
    assert sorted(p.name for p in (installed.cwd / "exported").iterdir()) == sorted(
        [f"{n}.ipynb" for n in SHIPPED_NOTEBOOKS] + ["nbval-sanitize.cfg"])
    assert installed.run("notebooks", "export", "exported", check=False).returncode == 2
    refreshed = installed.json("notebooks", "refresh", "--dir", "fresh")
    assert refreshed["verdict"] == "passed" and len(refreshed["refreshed"]) == len(TEMPLATED_NOTEBOOKS)
    for name in NOTEBOOKS:  # the refresh of the installed package reproduces what it ships, byte for byte
        shipped = next(n for n in listed if n["name"] == name)["path"]
        assert (installed.cwd / "fresh" / f"{name}.ipynb").read_bytes() == Path(shipped).read_bytes(), name
    # the load notebook too, but for what its measuring cells show (timings: nbval does not compare them either)
    shipped = next(n for n in listed if n["name"] == LOAD_NOTEBOOK)["path"]
    assert _unmeasured(installed.cwd / "fresh" / f"{LOAD_NOTEBOOK}.ipynb") == _unmeasured(Path(shipped))


def _unmeasured(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            cell["outputs"] = "measured"
    return nb
