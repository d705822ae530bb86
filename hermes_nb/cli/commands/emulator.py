"""Serve the emulated Hermes proxy on loopback until Ctrl-C. Per request, the header
X-Hermes-Emulator-Scenario: <name> overrides --scenario. The first stdout line is the endpoint."""

from hermes_nb.cli.app import Output
from hermes_nb.emulator.app import run
from hermes_nb.emulator.scenarios import EmulatorSpec

HELP = "run the embedded Hermes proxy emulator in the foreground"
SPEC = EmulatorSpec


def handle(spec: EmulatorSpec, out: Output) -> int:
    return run(spec, line=out.line, emit=out.emit, info=out.info)
