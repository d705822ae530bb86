"""``hermes-nb emulator``: the embedded proxy emulator in the foreground (:mod:`hermes_nb.emulator.foreground`)."""

from __future__ import annotations

import argparse

from hermes_nb.cli.output import Output
from hermes_nb.emulator.foreground import add_arguments, run


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "emulator", parents=[parent], help="run the embedded Hermes proxy emulator in the foreground",
        description="Serve the emulated Hermes proxy on loopback until Ctrl-C. Per request, the header "
                    "X-Hermes-Emulator-Scenario: <name> overrides --scenario.",
    )
    add_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    return run(args, line=out.line, emit=out.emit, info=out.info)
