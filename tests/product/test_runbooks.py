"""The runbooks and the architecture doc describe what exists: commands, flags, modules, files."""

from __future__ import annotations

import re

import pytest

from hermes_nb.cli.app import build_parser
from tests.helpers import ROOT

DOCS = ["runbooks/hermes-proxy-setup.md", "runbooks/hermes-proxy-smoke.md", "docs/architecture/adapter-hermes-proxy.md"]


def _commands() -> dict:
    parser = build_parser()
    return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices


def _uses() -> list[tuple[str, str]]:
    """(doc, command line) for every `hermes-nb …` the docs show, inline or in a code block."""
    found = []
    for doc in DOCS:
        for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
            for match in re.finditer(r"(?:^|[\s`/])hermes-nb ([a-z][^`#|]*)", line):
                found.append((doc, match.group(1).strip()))
    return found


USES = _uses()


def test_the_docs_show_the_notebook_commands() -> None:
    shown = {use.split()[0] for _, use in USES}
    assert {"smoke", "receipts", "promote", "check", "emulator", "rig"} <= shown


@pytest.mark.parametrize("doc, use", USES, ids=[f"{d.split('/')[-1]}:{u[:40]}" for d, u in USES])
def test_every_command_and_flag_in_the_docs_exists(doc: str, use: str) -> None:
    words = use.split()
    commands = _commands()
    assert words[0] in commands, f"{doc} shows unknown command `hermes-nb {words[0]}`"
    parser = commands[words[0]]
    options = set(parser._option_string_actions)
    for sub in (a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"):
        if len(words) > 1 and not words[1].startswith("-"):
            assert words[1] in sub.choices, f"{doc}: `hermes-nb {words[0]}` has no action {words[1]!r}"
            options |= set(sub.choices[words[1]]._option_string_actions)
    missing = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", use)) - options)
    assert not missing, f"{doc}: `hermes-nb {words[0]}` has no {missing}"


def test_every_module_the_layers_doc_names_exists_and_every_module_is_named() -> None:
    text = (ROOT / "docs/architecture/layers.md").read_text(encoding="utf-8")
    table = text[text.index("## Every module"):]
    named = set(re.findall(r"^\| `([a-z_/*]+\.py)` \|", table, flags=re.M))
    package = ROOT / "hermes_nb"
    for name in named - {"cli/commands/*.py"}:
        assert (package / name).is_file(), f"layers.md names hermes_nb/{name}, which does not exist"
    modules = {p.relative_to(package).as_posix() for p in package.rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py") and p.parent.name != "commands"} - {"testing.py"}
    assert not modules - named, f"modules missing from docs/architecture/layers.md: {sorted(modules - named)}"


def test_the_receipt_tree_in_the_docs_is_what_smoke_writes() -> None:
    from hermes_nb.receipts.index import INDEX_SCHEMA
    from hermes_nb.receipts.write import SIDECAR_SUFFIX

    arch = (ROOT / "docs/architecture/adapter-hermes-proxy.md").read_text(encoding="utf-8")
    smoke = (ROOT / "runbooks/hermes-proxy-smoke.md").read_text(encoding="utf-8")
    assert INDEX_SCHEMA in arch and f"<notebook>{SIDECAR_SUFFIX}" in arch
    for text in (arch, smoke):
        assert "<UTC date>/<run id>/" in text and "runbooks/receipts/<emulator|rig|live>/" in text
    ignored = (ROOT / ".gitignore").read_text()
    assert "runbooks/receipts/emulator/" in ignored and "runbooks/receipts/rig/" in ignored
    assert "runbooks/receipts/live" not in ignored
