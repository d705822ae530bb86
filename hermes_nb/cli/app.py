"""``hermes-nb``: flags → one library call → print → exit code. A command is a module of ``hermes_nb/cli/commands/``
(docstring, ``HELP``, ``SPEC`` and ``handle(spec, out)``, or ``ACTIONS``); only the command named is imported."""

import argparse
import contextlib
import functools
import gc
import importlib
import io
import json
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from hermes_nb import __version__
from hermes_nb.cli import interrupts
from hermes_nb.core.errors import HermesError, UsageError
from hermes_nb.core.facts import EXIT_OK, EXIT_USAGE

COMMANDS = ("check", "run", "adapter", "schema", "emulator", "probe", "rig", "load", "smoke",
            "matrix", "contract", "receipts", "promote", "notebooks")
#: every help page is 100 columns wide, whatever the terminal: the same text in a terminal and in docs/cli.md
FORMATTER = functools.partial(argparse.RawDescriptionHelpFormatter, width=100)
EPILOG = """exit codes: 0 passed/ready, 1 failed, 2 usage or configuration error,
3 blocked (operator action or a later retry needed).
--json prints exactly one JSON object on stdout."""


class Output:
    """Human lines on stdout, or exactly one JSON object with ``--json``; progress lines always on stderr."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.emitted = False
        self.emitted_exit_code: int | None = None

    def line(self, text: str = "") -> None:
        if not self.json_mode:
            print(text, flush=True)

    def info(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def emit(self, obj: dict[str, Any]) -> None:
        if not self.json_mode:
            return
        if self.emitted:
            raise RuntimeError("Output.emit called twice")
        self.emitted = True
        code = obj.get("exit_code")
        self.emitted_exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        print(json.dumps(obj, indent=2, default=str, ensure_ascii=False), flush=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with ``only``, that command alone (start-up cost: its imports alone)."""
    parser = _Parser(prog="hermes-nb", epilog=EPILOG, formatter_class=FORMATTER,
                     description="Prove a local Hermes proxy works as a UH runtime, and keep the evidence.")
    parser.add_argument("--version", action="version", version=f"hermes-nb {__version__}")
    parent = _Parser(add_help=False)
    for p in (parser, parent):  # before the command too (`hermes-nb --json run …`); main() reads it from argv
        p.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only else COMMANDS:
        module = importlib.import_module(f"hermes_nb.cli.commands.{name}")
        actions = getattr(module, "ACTIONS", None)
        command = sub.add_parser(name, parents=[parent], help=module.HELP, description=(module.__doc__ or "").strip(),
                                 epilog=None if actions else EPILOG, formatter_class=FORMATTER)
        if actions is None:
            module.SPEC.add_arguments(command)
            command.set_defaults(handler=module.handle, spec=module.SPEC)
            continue
        command.set_defaults(handler=None, needs=f"hermes-nb {name}: choose an action: {', '.join(actions)}")
        inner = command.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
        for action, (spec, handler, help_text) in actions.items():
            page = inner.add_parser(action, parents=[parent], help=help_text, description=help_text, epilog=EPILOG,
                                    formatter_class=FORMATTER)
            spec.add_arguments(page)
            page.set_defaults(handler=handler, spec=spec)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI. As the program (``argv`` None, main thread) it owns SIGINT and SIGTERM; once the result is decided no
    signal can change it."""
    entry = argv is None and threading.current_thread() is threading.main_thread()
    if entry:
        interrupts.install()
    args = list(sys.argv[1:] if argv is None else argv)
    out = Output("--json" in args)
    try:
        if entry:
            interrupts.arm()  # a Ctrl-C during start-up is delivered here
        return _main(args, out)
    except KeyboardInterrupt:  # after the command's own handling: the code it emitted stands
        return _interrupted(out)
    finally:
        if entry:
            interrupts.disarm()
            # the program ends next: the interpreter's exit would garbage-collect every module's objects, a
            # smoke's 90,000 (0.15 s of P4, with nothing to reclaim); frozen, they are left to the process's end
            gc.freeze()


def _main(args: list[str], out: Output) -> int:
    try:
        command = next((word for word in args if word == "--" or not word.startswith("-")), None)
        parser = build_parser(only=command if command in COMMANDS else None)
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed) if out.json_mode else contextlib.nullcontext():
                parsed = parser.parse_args(args)
        except SystemExit as exc:  # --help / --version printed their text
            if exc.code:
                raise
            out.emit({"help": printed.getvalue(), "exit_code": EXIT_OK})
            return EXIT_OK
        if getattr(parsed, "handler", None) is None:
            parser.print_help(sys.stderr)
            return _fail(out, UsageError(getattr(parsed, "needs", "hermes-nb: choose a command")), EXIT_USAGE)
        return int(parsed.handler(parsed.spec.from_args(parsed), out))
    except HermesError as exc:
        return _fail(out, exc, exc.exit_code)
    except KeyboardInterrupt:
        return _interrupted(out)
    except BrokenPipeError:  # the reader went away (`hermes-nb … | head`): stop quietly, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _interrupted(out: Output) -> int:
    if out.emitted:
        return out.emitted_exit_code if out.emitted_exit_code is not None else interrupts.exit_code()
    return _fail(out, HermesError("interrupted"), interrupts.exit_code())


def _fail(out: Output, exc: Exception, code: int) -> int:
    problems = getattr(exc, "problems", None) or [str(exc)]
    if not out.emitted:
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
