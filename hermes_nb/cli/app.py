"""``hermes-nb``: flags -> one library call -> print -> documented exit code.

Exit codes (every command):
  0  passed / ready
  1  failed
  2  usage or configuration error
  3  blocked (operator action or a later retry needed)

``--json`` prints exactly one JSON object on stdout, errors included. Each command lives in
``hermes_nb/cli/commands/<name>.py``: ``HELP`` (one line), its docstring (the description), ``SPEC`` (the job's
:class:`~hermes_nb.core.spec.Spec`: the flags are generated from it) and ``handle(spec, out) -> int``; a command
with actions (``adapter add|show``) has ``ACTIONS = {name: (Spec, handler, help)}`` instead.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NoReturn

from hermes_nb import __version__
from hermes_nb.cli import interrupts
from hermes_nb.cli.output import Output
from hermes_nb.core.errors import HermesError, UsageError
from hermes_nb.core.facts import EXIT_OK, EXIT_USAGE
from hermes_nb.core.spec import Spec

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = ("check", "run", "adapter", "schema", "emulator", "probe", "rig", "load", "smoke",
            "matrix", "contract", "receipts", "promote", "notebooks")

#: every help page is 100 columns wide, whatever the terminal: the same text in a terminal and in docs/cli.md
FORMATTER = functools.partial(argparse.RawDescriptionHelpFormatter, width=100)
EPILOG = """exit codes: 0 passed/ready, 1 failed, 2 usage or configuration error,
3 blocked (operator action or a later retry needed).
--json prints exactly one JSON object on stdout."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _command_in(args_list: Sequence[str]) -> str | None:
    """The subcommand named in argv (the first word that is not an option), if it is one of ours."""
    for word in args_list:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _add(sub: Any, name: str, spec: type[Spec], handler: Callable[..., int], help_text: str, description: str,
         parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, parents=[parent], help=help_text, description=description,
                                                epilog=EPILOG, formatter_class=FORMATTER)
    spec.add_arguments(p)
    p.set_defaults(handler=handler, spec=spec)
    return p


def _register(sub: Any, name: str, module: ModuleType, parent: argparse.ArgumentParser) -> None:
    description = (module.__doc__ or "").strip()
    actions = getattr(module, "ACTIONS", None)
    if actions is None:
        _add(sub, name, module.SPEC, module.handle, module.HELP, description, parent)
        return
    p = sub.add_parser(name, parents=[parent], help=module.HELP, description=description, formatter_class=FORMATTER)
    inner = p.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    for action, (spec, handler, help_text) in actions.items():
        _add(inner, action, spec, handler, help_text, help_text, parent)
    p.set_defaults(handler=None, spec=None, needs=f"hermes-nb {name}: choose an action: {', '.join(actions)}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with ``only``, register just that command (start-up cost: its imports alone)."""
    parser = _Parser(prog="hermes-nb", epilog=EPILOG, formatter_class=FORMATTER,
                     description="Prove a local Hermes proxy works as a UH runtime, and keep the evidence.")
    parser.add_argument("--version", action="version", version=f"hermes-nb {__version__}")
    # also accepted before the command (`hermes-nb --json run …`); main() reads it from argv either way
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parent = _Parser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only else COMMANDS:
        _register(sub, name, importlib.import_module(f"hermes_nb.cli.commands.{name}"), parent)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI. Called as the program (``argv`` None, main thread), it owns SIGINT and SIGTERM: the first one, at
    any moment, ends with one line and the documented exit code (130 / 143; a run in flight ends ``cancelled``,
    exit 1; a smoke or matrix writes its receipts and CI outputs first); later ones are ignored, and once the
    result is decided no signal can change it."""
    entry = argv is None and threading.current_thread() is threading.main_thread()
    if entry:
        interrupts.install()
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = Output("--json" in args_list)
    try:
        if entry:
            interrupts.arm()  # a Ctrl-C during start-up is delivered here
        return _main(args_list, out)
    except KeyboardInterrupt:  # arrived after the command's own handling: its emitted code stands
        return _interrupted(out)
    finally:
        if entry:
            interrupts.disarm()


def _interrupted(out: Output) -> int:
    code = interrupts.exit_code()  # 130 for Ctrl-C, 143 for SIGTERM
    if out.emitted:
        return out.emitted_exit_code if out.emitted_exit_code is not None else code
    return _fail(out, HermesError("interrupted"), code)


def _main(args_list: list[str], out: Output) -> int:
    try:
        parser = build_parser(only=_command_in(args_list))
        args = _parse(parser, args_list, out)
        if args is None:
            return EXIT_OK
        if getattr(args, "handler", None) is None:
            parser.print_help(sys.stderr)
            return _fail(out, UsageError(getattr(args, "needs", "hermes-nb: choose a command")), EXIT_USAGE)
        return int(args.handler(args.spec.from_args(args), out))
    except HermesError as exc:
        return _fail(out, exc, exc.exit_code)
    except KeyboardInterrupt:
        return _interrupted(out)
    except BrokenPipeError:  # the reader went away (`hermes-nb … | head`): stop quietly, as a Unix tool does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _parse(parser: argparse.ArgumentParser, args_list: list[str], out: Output) -> argparse.Namespace | None:
    """Parse; ``--help``/``--version`` with ``--json`` become one ``{"help": …}`` object."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer) if out.json_mode else contextlib.nullcontext():
            return parser.parse_args(args_list)
    except SystemExit as exc:  # --help / --version printed their text
        if exc.code not in (0, None):
            raise
        if out.json_mode:
            out.emit({"help": buffer.getvalue(), "exit_code": EXIT_OK})
        return None


def _fail(out: Output, exc: Exception, code: int) -> int:
    problems = getattr(exc, "problems", None) or [str(exc)]
    if out.json_mode and not out.emitted:
        out.emit({"error": str(exc), "problems": problems, "exit_code": code})
    for problem in problems:
        print(f"hermes-nb: error: {problem}", file=sys.stderr)
    return code


def reference() -> str:
    """docs/cli.md: every command's ``--help``, generated from the specs (``make docs``; a test keeps it equal)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["# hermes-nb command reference", "",
             "Generated from the commands' specs by `make docs` (the same text as each `--help`).", "",
             "```text", parser.format_help().strip(), "```"]
    for name, command in sub.choices.items():
        actions = next((a for a in command._actions if isinstance(a, argparse._SubParsersAction)), None)
        pages = [(f"{name} {verb}", p) for verb, p in actions.choices.items()] if actions else [(name, command)]
        for title, page in pages:
            parts += ["", f"## {title}", "", "```text", page.format_help().strip(), "```"]
    return "\n".join(parts) + "\n"
