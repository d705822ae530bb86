"""The spec machinery: one declaration, the CLI's flags, the magics' parser and the parameters cell agree."""

from __future__ import annotations

import argparse
import ast
from typing import Annotated, Literal

import pytest
from pydantic import Field, model_validator

from hermes_nb.core.errors import UsageError
from hermes_nb.core.spec import CommaList, Opt, Spec, conflict


class Demo(Spec):
    mission: Annotated[str | None, Opt(positional=True, faces=frozenset({"cli"}))] = Field(
        None, description="a mission file")
    endpoint: str | None = Field(None, description="proxy endpoint incl. /v1")
    rig: Literal["stale", "live"] | None = Field(None, description="start the rig")
    cell_timeout_s: float = Field(120.0, gt=0, description="the longest run of one cell")
    only: Annotated[list[str], Opt(repeat=True)] = Field(default_factory=list, description="run only this one")
    concurrency: Annotated[list[int], CommaList] = Field([1, 4], description="levels")
    html: bool = Field(True, description="write HTML renders")
    dry_run: Annotated[bool, Opt(faces=frozenset({"cli", "magic"}))] = Field(False, description="send nothing")

    @model_validator(mode="after")
    def _one_target(self) -> Demo:
        if self.endpoint and self.rig:
            raise conflict("endpoint", "rig")
        return self


def _parse(*argv: str) -> Demo:
    parser = argparse.ArgumentParser()
    Demo.add_arguments(parser)
    return Demo.from_args(parser.parse_args(argv))


def test_flags_fill_the_spec_and_defaults_come_from_it() -> None:
    spec = _parse("m.yaml", "--only", "a", "--only", "b", "--concurrency", "2,8", "--no-html", "--dry-run")
    assert (spec.mission, spec.only, spec.concurrency, spec.html, spec.dry_run) == ("m.yaml", ["a", "b"], [2, 8],
                                                                                   False, True)
    assert _parse() == Demo()


@pytest.mark.parametrize(("argv", "line"), [
    (["--cell-timeout-s", "0"], "--cell-timeout-s: must be > 0"),
    (["--endpoint", "http://x/v1", "--rig", "live"], "--endpoint and --rig cannot be used together"),
    (["--rig", "warm"], "--rig: must be 'stale' or 'live'"),
])
def test_a_bad_value_is_one_line_naming_the_flag(argv: list[str], line: str) -> None:
    with pytest.raises(UsageError) as caught:
        _parse(*argv)
    assert str(caught.value) == line


def test_the_library_face_names_the_option_as_a_keyword() -> None:
    with pytest.raises(UsageError, match="^endpoint and rig cannot be used together$"):
        Demo.build(endpoint="http://x/v1", rig="live")


def test_help_and_the_parameters_cell_state_the_same_default() -> None:
    help_text = Demo.parser("%demo").format_help()
    assert "(default: 120)" in " ".join(help_text.split())
    cell = Demo.parameters_source()
    tree = ast.parse(cell)
    values = {node.target.id: ast.literal_eval(node.value) for node in tree.body}  # type: ignore[union-attr]
    assert values["cell_timeout_s"] == 120.0 and values["concurrency"] == [1, 4]
    assert "dry_run" not in values and "mission" not in values  # not notebook options


def test_a_magic_parser_never_exits() -> None:
    with pytest.raises(UsageError, match="%demo"):
        Demo.parser("%demo").parse_args(["--bogus"])
