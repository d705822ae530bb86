"""No dead code: vulture over the package (the tests, benchmarks and scripts count as its users), with a short
allow-list of what only a framework calls. Pydantic fields are data (they are dumped, not read by name) and
are not reported."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from tests.helpers import ROOT

vulture = pytest.importorskip("vulture")

#: names only a framework calls, each with the framework
ALLOWED = {
    "formatter_class": "argparse reads it from the parser (cli/app.py)",
    "start_channels": "nbclient calls it on the kernel client it makes (nbrun/smoke.py)",
    "wait_for_ready": "nbclient calls it on the kernel client it makes (nbrun/smoke.py)",
    "SAFE_PROTOCOLS": "mistune's HTMLRenderer reads it when it sanitises a link (core/htmlkit.py)",
    "image": "mistune's HTMLRenderer calls it for each image (core/htmlkit.py)",
    "do_POST": "http.server's handler calls it for each POST (rig/rig.py: the fake portal)",
    "log_message": "http.server's handler calls it to log (rig/rig.py: silenced)",
}
#: decorators whose functions a framework calls (pydantic validators, IPython magics)
DECORATORS = ["@field_validator", "@model_validator", "@field_serializer", "@magic_arguments", "@line_magic",
              "@cell_magic", "@*.setter"]
#: protocol names a framework calls: pydantic's config, IPython's display hooks, lazy modules, pytest hooks
PROTOCOLS = ["model_config", "_repr_*", "_ipython_display_", "__getattr__", "__dir__", "pytest_*"]


def _pydantic_fields(path: Path) -> set[str]:
    from pydantic import BaseModel

    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return {name for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, BaseModel) and cls.__module__ == module.__name__ for name in cls.model_fields}


def _findings() -> list[str]:
    v = vulture.Vulture(ignore_names=PROTOCOLS, ignore_decorators=DECORATORS)
    v.scavenge([str(ROOT / d) for d in ("hermes_nb", "tests", "benchmarks", "scripts")])
    package = ROOT / "hermes_nb"
    found = []
    for item in v.get_unused_code(min_confidence=60):
        path = Path(item.filename).resolve()
        if package not in path.parents or item.name in ALLOWED:
            continue
        if item.typ == "variable" and item.name in _pydantic_fields(path):
            continue  # a document's field: dumped and validated, never read by name
        found.append(f"{path.relative_to(ROOT)}:{item.first_lineno}: unused {item.typ} {item.name!r}")
    return found


def test_no_dead_code_in_the_package() -> None:
    assert _findings() == []


def test_the_allow_list_names_only_what_still_exists() -> None:
    text = "\n".join(p.read_text() for p in (ROOT / "hermes_nb").rglob("*.py"))
    assert [name for name in ALLOWED if name not in text] == []
