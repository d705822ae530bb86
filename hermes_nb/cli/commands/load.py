"""``hermes-nb load``: how many streams the proxy carries. Flags from :class:`~hermes_nb.load.spec.LoadSpec` (and
the target flags every command has), one call (:func:`hermes_nb.load.receipt.load`), print, exit code: 0 every
request succeeded, 3 blocked (429s stopped the ramp, or nobody answered), 1 other errors or interrupted, 2 usage.
See docs/load.md."""

from __future__ import annotations

import argparse

from hermes_nb.cli.options import add_config_flags, config_from_args
from hermes_nb.cli.output import Output
from hermes_nb.load.receipt import load
from hermes_nb.load.spec import LoadSpec


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("load", parents=[parent], help="load the proxy: TTFT, ITL, E2E, gaps, throughput and 429s "
                                                      "by concurrency",
                       description="Chat completions at rising concurrency; per level TTFT, ITL, E2E, gaps between "
                                   "tokens, throughput and errors by class, from raw samples (docs/load.md).")
    add_config_flags(p)
    LoadSpec.add_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    run = load(LoadSpec.from_args(args), config_from_args(args), progress=out.info)
    if out.json_mode:  # the human text carries them on stdout; with --json, stderr says them too
        for warning in run.report.warnings:
            out.info(f"warning: {warning}")
    for line in run.text().splitlines():
        out.line(line)
    out.emit(run.to_dict())
    return run.exit_code
