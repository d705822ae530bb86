"""The package data the commands need at run time, found with :mod:`importlib.resources`.

The notebooks the smoke executes (and the guide, which it does not), the recorded wire contracts and the
nbval sanitize rules ship inside the wheel under ``hermes_nb/data/``; nothing is
looked up through a repository checkout. (The top-level ``notebooks/`` of the
repository holds the same notebooks for people and nbval; a test keeps them
byte-identical.)
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from hermes_nb.core.facts import SHIPPED_NOTEBOOKS

__all__ = ["data_dir", "notebooks_dir", "notebook_path", "contracts_dir", "contract_names", "sanitize_file"]


def _path(node: Traversable) -> Path:
    # hermes_nb is installed as files (wheel or editable), never zipped: every resource is a real path
    return Path(str(node))


def data_dir() -> Path:
    return _path(files("hermes_nb") / "data")


def notebooks_dir() -> Path:
    """The shipped notebooks (what ``hermes-nb smoke`` and ``hermes-nb load --out`` execute, and the guide)."""
    return data_dir() / "notebooks"


def notebook_path(name: str) -> Path:
    if name not in SHIPPED_NOTEBOOKS:
        raise ValueError(f"unknown notebook {name!r}; known: {', '.join(SHIPPED_NOTEBOOKS)}")
    return notebooks_dir() / f"{name}.ipynb"


def contracts_dir() -> Path:
    """The recorded wire contracts (``seed``, ``hermes-agent-<version>``)."""
    return data_dir() / "contracts"


def contract_names() -> list[str]:
    return sorted(p.stem for p in contracts_dir().glob("*.json"))


def sanitize_file() -> Path:
    """The nbval sanitize rules the stored notebook outputs are normalised with."""
    return data_dir() / "nbval-sanitize.cfg"
