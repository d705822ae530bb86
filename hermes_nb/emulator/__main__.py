"""``python -m hermes_nb.emulator [flags]``: the same server as ``hermes-nb emulator [flags]``, without the CLI."""

import argparse
import json
import sys

from hermes_nb.core.errors import HermesError
from hermes_nb.emulator.app import run
from hermes_nb.emulator.scenarios import EmulatorSpec

parser = argparse.ArgumentParser(prog="python -m hermes_nb.emulator",
                                 description="Serve the emulated Hermes proxy on loopback until Ctrl-C.")
EmulatorSpec.add_arguments(parser)
parser.add_argument("--json", action="store_true", help="print one JSON object describing the server")
args = parser.parse_args()
try:  # stdout: the endpoint line, or with --json the one JSON object
    sys.exit(run(EmulatorSpec.from_args(args), line=lambda text: None if args.json else print(text, flush=True),
                 emit=lambda obj: print(json.dumps(obj, indent=2), flush=True) if args.json else None,
                 info=lambda text: print(text, file=sys.stderr, flush=True)))
except HermesError as exc:
    print(f"hermes-nb emulator: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
