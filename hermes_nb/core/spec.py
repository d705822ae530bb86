"""Job specs: every option of a job declared once, as a pydantic field; the CLI's flags, the magics' parser and the
notebooks' parameters cell are generated from it. A bad value is one line naming the option as the face spells it."""

from __future__ import annotations

import argparse
import os
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

from pydantic import BeforeValidator, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError, PydanticUndefined

from hermes_nb.core.errors import UsageError
from hermes_nb.core.model import StrictModel

Face = Literal["cli", "magic", "notebook"]


@dataclass(frozen=True)
class Opt:
    """How the faces show one option (``repeat``: a list as a repeated flag, ``--only a --only b``)."""

    faces: frozenset[str] = frozenset({"cli", "magic", "notebook"})
    positional: bool = False
    repeat: bool = False
    metavar: str | None = None
    short: str | None = None


#: a list option written ``a,b,c`` on the command line (a list in Python)
CommaList = BeforeValidator(lambda v: [p.strip() for p in v.split(",") if p.strip()] if isinstance(v, str) else v)


def conflict(*names: str, why: str = "cannot be used together") -> PydanticCustomError:
    """The error of a rule across options: each face names them its own way (``--endpoint and --rig …``)."""
    return PydanticCustomError("conflict", "{names} " + why, {"names": " and ".join(names), "fields": names})


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def _opt(info: FieldInfo) -> Opt:
    return next((m for m in info.metadata if isinstance(m, Opt)), Opt())


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        inner = args[0] if len(args) == 1 else annotation
        return inner, len(args) < len(get_args(annotation))
    return annotation, False


def _type_text(annotation: Any) -> str:
    """How the parameters cell writes the type (a string when it needs an import: ``"Optional[str]"``)."""
    inner, optional = _unwrap(annotation)
    if get_origin(inner) is Literal:
        inner = type(get_args(inner)[0])
    if get_origin(inner) in (list, Sequence):
        item = get_args(inner)[0]
        item = get_args(item)[0] if get_origin(item) is Annotated else item  # a constrained item: its type
        name = f"list[{getattr(item, '__name__', 'str')}]"
    else:
        name = getattr(inner, "__name__", "str")
    return f'"Optional[{name}]"' if optional else name


class Spec(StrictModel):
    """A job's options. A path may be given as a :class:`os.PathLike` (the library face), kept as its text."""

    @model_validator(mode="before")
    @classmethod
    def _paths_as_text(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in data.items()}
        return data

    @classmethod
    def options(cls, face: Face) -> Iterator[tuple[str, FieldInfo, Opt]]:
        for name, info in cls.model_fields.items():
            opt = _opt(info)
            if face in opt.faces:
                yield name, info, opt

    @classmethod
    def spelled(cls, name: str, face: Face | Literal["library"]) -> str:
        """How ``face`` writes option ``name``: ``--cell-timeout-s``, ``MISSION`` (positional), ``cell_timeout_s``."""
        info = cls.model_fields.get(name)
        if face in ("library", "notebook") or info is None:
            return name
        return name.upper() if _opt(info).positional else flag_of(name)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, face: Face = "cli") -> None:
        """One argparse argument per option; every default is None (given and defaulted stay apart)."""
        for name, info, opt in cls.options(face):
            inner, _ = _unwrap(info.annotation)
            help_text, default = info.description or "", info.default
            if get_origin(inner) is Literal:
                help_text += f" (one of: {', '.join(map(str, get_args(inner)))})"
            if isinstance(default, (list, tuple)):
                default = ",".join(map(str, default))
            shown = default is not PydanticUndefined and default is not False and default not in (None, "")
            if shown and inner is not bool:
                help_text += f" (default: {default:g})" if isinstance(default, float) else f" (default: {default})"
            help_text = help_text.replace("%", "%%")
            if opt.positional:
                parser.add_argument(name, nargs="?", default=None, metavar=opt.metavar or name.upper(),
                                    help=help_text)
                continue
            names = [flag_of(name), *([opt.short] if opt.short else [])]
            if inner is bool:  # a flag on by default is turned off by --no-<name>
                off = info.default is True
                parser.add_argument(*([flag_of("no_" + name)] if off else names), dest=name, action="store_const",
                                    const=not off, default=None, help=f"turn off: {help_text}" if off else help_text)
                continue
            metavar = opt.metavar or ("NAME" if opt.repeat else _metavar(name, inner))
            action = "append" if opt.repeat else "store"
            # pydantic converts the text of every other type; a Literal of numbers only matches numbers
            numbers = get_origin(inner) is Literal and all(isinstance(a, int) for a in get_args(inner))
            extra: dict[str, Any] = {"type": int} if numbers else {}
            parser.add_argument(*names, dest=name, action=action, default=None, metavar=metavar, help=help_text,
                                **extra)

    @classmethod
    def from_args(cls, namespace: argparse.Namespace | Mapping[str, Any], face: Face = "cli", **fixed: Any) -> Self:
        """The spec from parsed flags (None = not given); a bad value is a :class:`UsageError` naming the flag."""
        given = vars(namespace) if isinstance(namespace, argparse.Namespace) else dict(namespace)
        values = {name: given[name] for name, _, _ in cls.options(face) if given.get(name) is not None}
        return cls.build(face, **values, **fixed)

    @classmethod
    def build(cls, face: Face | Literal["library"] = "library", **values: Any) -> Self:
        """The spec from keyword values; a bad value is a one-line :class:`UsageError` naming it as ``face`` does."""
        try:
            return cls(**values)
        except ValidationError as exc:
            raise UsageError(cls.explain(exc, face)) from None

    @classmethod
    def explain(cls, exc: ValidationError, face: Face | Literal["library"] = "library") -> str:
        problems = []
        for err in exc.errors(include_url=False, include_input=False):
            ctx = err.get("ctx") or {}
            if err["type"] == "conflict":
                names = " and ".join(cls.spelled(n, face) for n in ctx.get("fields", ()))
                problems.append(err["msg"].replace(str(ctx.get("names")), names, 1))
                continue
            loc = [str(p) for p in err.get("loc", ())]
            where = cls.spelled(loc[0], face) if loc else "options"
            if err["type"] == "extra_forbidden":
                problems.append(f"{where}: no such option")
            elif err["type"] == "missing":
                problems.append(f"{where} is required")
            else:
                msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
                for old, new in (("Input should be", "must be"), ("greater than", ">"), ("less than", "<"),
                                 (" or equal to ", "= "), ("> =", ">="), ("< =", "<=")):
                    msg = msg.replace(old, new)
                problems.append(f"{where}: {msg}")
        return "; ".join(problems)

    @classmethod
    def parser(cls, prog: str, description: str = "", face: Face = "magic") -> argparse.ArgumentParser:
        parser = _Parser(prog=prog, description=description, add_help=False)
        cls.add_arguments(parser, face)
        return parser

    @classmethod
    def parameters_source(cls, extra: Sequence[tuple[str, str, str, str]] = ()) -> str:
        """The notebook's ``parameters`` cell (``extra``: (name, type, default literal, description) lines)."""
        lines = []
        for name, info, _ in cls.options("notebook"):
            default = info.get_default(call_default_factory=True)
            lines.append(f"{name}: {_type_text(info.annotation)} = {default!r}  # {info.description or ''}")
        lines += [f"{name}: {typ} = {default}  # {text}" for name, typ, default, text in extra]
        return "\n".join(lines)


def _metavar(name: str, inner: Any) -> str:
    if name == "endpoint" or name.endswith("_endpoint"):
        return "URL"
    if name.endswith(("manifest", "root", "_file", "_dir", "_bin", "_xml", "_md", "out")):
        return "PATH"
    if get_origin(inner) is Literal:
        return "{" + ",".join(map(str, get_args(inner))) + "}"
    if name.endswith("_s"):
        return "S"
    if inner in (int, float) or (get_origin(inner) is list and get_args(inner)[0] in (int, float)):
        return "N" if get_origin(inner) is not list else "N,N,…"
    return "TEXT" if get_origin(inner) is not list else "A,B,…"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")
