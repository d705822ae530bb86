"""README stays true: every command and flag it shows exists, and the two commands are real targets."""

from __future__ import annotations

import re

import pytest

from hermes_nb.cli.app import build_parser
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _code_lines() -> list[str]:
    lines: list[str] = []
    for block in re.findall(r"```(?:sh)?\n(.*?)```", README, flags=re.S):
        current = ""
        for raw in block.splitlines():
            text = raw.split("  #", 1)[0].rstrip()
            if text.startswith(" ") and current:
                current += " " + text.strip()
                continue
            if current:
                lines.append(current)
            current = text.strip()
        if current:
            lines.append(current)
    return [line for line in lines if re.match(r"(\S*/)?hermes-nb\s", line)]


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


COMMAND_LINES = _code_lines()


def test_readme_shows_the_two_commands_and_ci_runs_one():
    assert "make smoke" in README and "make test" in README
    makefile = (ROOT / "Makefile").read_text()
    for target in ("install", "rig-venv", "test", "smoke", "notebooks", "schema"):
        assert re.search(rf"^{re.escape(target)}:", makefile, flags=re.M), target
    assert re.search(r"^test: install rig-venv", makefile, flags=re.M)
    assert re.search(r"^smoke: install", makefile, flags=re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_readme_names_every_command():
    for name in _subparsers():
        assert re.search(rf"(hermes-nb |`){name}\b", README), f"README does not name `{name}`"


@pytest.mark.parametrize("line", COMMAND_LINES, ids=[" ".join(line.split()[:2]) for line in COMMAND_LINES])
def test_every_flag_in_the_readme_exists(line):
    words = line.split()
    name = words[1]
    subs = _subparsers()
    assert name in subs, f"README shows unknown command {name!r}"
    parser = subs[name]
    options = set(parser._option_string_actions)
    nested = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    for sub in nested:
        for child in sub.choices.values():
            options |= set(child._option_string_actions)
    flags = {m for m in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line)}
    missing = sorted(flags - options)
    assert not missing, f"`hermes-nb {name}` has no {missing}"


def test_the_cli_reference_is_generated_from_the_specs() -> None:
    """docs/cli.md is every command's --help (``make docs``): a flag, a default or a word changed in a spec shows."""
    from hermes_nb.cli.app import reference

    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == reference()
