"""Text that stays true: every dotted ``hermes_nb.x.y`` the package's docstrings, docs/ and the README name resolves."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOTTED = re.compile(r"\bhermes_nb(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _texts() -> list[Path]:
    return [*sorted((ROOT / "hermes_nb").rglob("*.py")), *sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def resolves(reference: str) -> bool:
    """The longest importable module prefix, then attributes; ``hermes_nb.kit.start_target`` resolves."""
    parts = reference.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def test_every_dotted_reference_resolves() -> None:
    broken = sorted({f"{path.relative_to(ROOT)}: {ref}" for path in _texts()
                     for ref in (m.group(0).rstrip(".") for m in DOTTED.finditer(path.read_text()))
                     if not resolves(ref)})
    assert broken == []


@pytest.mark.parametrize("reference, ok", [
    ("hermes_nb.core.resolve.resolve_runtime_config", True), ("hermes_nb.kit.open_job", True),
    ("hermes_nb.resolve_runtime_config", True), ("hermes_nb.records.Exchange", False),
    ("hermes_nb.core.records.NoSuchThing", False),
])
def test_the_resolver_tells_stale_from_true(reference: str, ok: bool) -> None:
    assert resolves(reference) is ok
