"""``hermes-nb``: flags -> one library call -> print -> documented exit code.

Exit codes (every command):
  0  passed / ready
  1  failed
  2  usage or configuration error
  3  blocked (operator action or a later retry needed)

``--json`` prints exactly one JSON object on stdout, errors included.
Each subcommand lives in ``hermes_nb/commands/<name>.py`` and exposes
``register(subparsers, parent)``; its handler is ``handler(args, out) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Callable, Sequence

from . import __version__
from .errors import HermesError, UsageError

__all__ = ["main", "Output", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_BLOCKED", "exit_code_for"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED = 0, 1, 2, 3

#: status word -> exit code (runs, checks, smoke, probe verdicts)
_STATUS_EXIT = {
    "passed": EXIT_OK,
    "ready": EXIT_OK,
    "ok": EXIT_OK,
    "failed": EXIT_FAILED,
    "error": EXIT_FAILED,
    "misconfigured": EXIT_USAGE,
    "blocked": EXIT_BLOCKED,
    "locked": EXIT_BLOCKED,
    "unreachable": EXIT_BLOCKED,
    "cancelled": EXIT_FAILED,
}

COMMAND_MODULES = (
    "check",
    "run",
    "adapter",
    "schema",
    "emulator",
    "probe",
    "rig",
    "smoke",
    "receipts",
    "promote",
    "notebooks",
)

EPILOG = """exit codes: 0 passed/ready, 1 failed, 2 usage or configuration error,
3 blocked (operator action or a later retry needed).
--json prints exactly one JSON object on stdout."""


def exit_code_for(status: str) -> int:
    return _STATUS_EXIT.get(status, EXIT_FAILED)


class Output:
    """Human lines on a terminal, or exactly one JSON object with ``--json``."""

    def __init__(self, json_mode: bool, stream: Any = None, err: Any = None) -> None:
        self.json_mode = json_mode
        self.stream = stream or sys.stdout
        self.err = err or sys.stderr
        self._emitted = False

    def line(self, text: str = "") -> None:
        """Human output (suppressed in --json mode: goes to stderr there)."""
        if self.json_mode:
            return
        print(text, file=self.stream, flush=True)

    def info(self, text: str) -> None:
        """Progress/diagnostic line: always stderr, so stdout stays parseable."""
        print(text, file=self.err, flush=True)

    def emit(self, obj: dict[str, Any]) -> None:
        """The single JSON object (only in --json mode, only once)."""
        if not self.json_mode:
            return
        if self._emitted:
            raise RuntimeError("Output.emit called twice")
        self._emitted = True
        print(json.dumps(obj, indent=2, default=str, ensure_ascii=False), file=self.stream, flush=True)

    @property
    def emitted(self) -> bool:
        return self._emitted


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _command_in(args_list: Sequence[str]) -> str | None:
    """The subcommand named in argv (the first word that is not an option), if it is one of ours."""
    for word in args_list:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMAND_MODULES else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with ``only``, register just that command (start-up cost: its imports alone)."""
    parser = _Parser(
        prog="hermes-nb",
        description="Prove a local Hermes proxy works as a UH runtime, and keep the evidence.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hermes-nb {__version__}")
    # also accepted before the command (`hermes-nb --json run …`); main() reads it from argv either way
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parent = _Parser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only else COMMAND_MODULES:
        try:
            module = importlib.import_module(f"hermes_nb.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"hermes_nb.commands.{name}":
                continue
            raise
        module.register(sub, parent)
    for action in sub.choices.values():
        if not action.epilog:
            action.epilog = EPILOG
            action.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args_list
    out = Output(json_mode)
    try:
        parser = build_parser(only=_command_in(args_list))
        args = _parse(parser, args_list, out)
        if args is None:
            return EXIT_OK
        handler: Callable[[argparse.Namespace, Output], int] | None = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return _fail(out, UsageError("hermes-nb: choose a command"), EXIT_USAGE)
        return int(handler(args, out))
    except HermesError as exc:
        return _fail(out, exc, exc.exit_code)
    except KeyboardInterrupt:
        return _fail(out, HermesError("interrupted"), 130)
    except BrokenPipeError:
        # The reader went away (`hermes-nb … | head`): stop quietly, as a Unix tool does.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _parse(parser: argparse.ArgumentParser, args_list: list[str], out: Output) -> argparse.Namespace | None:
    """Parse; ``--help``/``--version`` with ``--json`` become one ``{"help": …}`` object."""
    if not out.json_mode:
        try:
            return parser.parse_args(args_list)
        except SystemExit as exc:  # --help / --version printed their text
            if exc.code in (0, None):
                return None
            raise
    import contextlib
    import io

    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            return parser.parse_args(args_list)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
        out.emit({"help": buffer.getvalue(), "exit_code": EXIT_OK})
        return None


def _fail(out: Output, exc: Exception, code: int) -> int:
    problems = getattr(exc, "problems", None) or [str(exc)]
    if out.json_mode and not out.emitted:
        out.emit({"error": str(exc), "problems": problems, "exit_code": code})
    for problem in problems:
        print(f"hermes-nb: error: {problem}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
