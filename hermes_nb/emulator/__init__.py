"""Embedded emulator of the Hermes proxy (and of an OpenAI-compatible upstream)::

    from hermes_nb.emulator import serve_emulator
    with serve_emulator(profile="hermes-agent", scenario="ok", seed=0) as emu:
        emu.endpoint   # "http://127.0.0.1:<port>/v1" (the handle is also that string)
        emu.requests   # what the emulator received, Authorization redacted

Per request, the header ``X-Hermes-Emulator-Scenario: <name>`` overrides the
scenario (the real proxy forwards it to its upstream too).
"""

from hermes_nb.emulator.app import RecordedRequest, create_app
from hermes_nb.emulator.scenarios import (
    ALL_SCENARIOS,
    PROFILES,
    PROXY_SCENARIOS,
    SCENARIO_HEADER,
    SCENARIOS,
    UPSTREAM_SCENARIOS,
)
from hermes_nb.emulator.server import EmulatorHandle, serve_emulator

__all__ = ["PROFILES", "SCENARIOS", "PROXY_SCENARIOS", "UPSTREAM_SCENARIOS", "ALL_SCENARIOS", "SCENARIO_HEADER",
           "create_app", "serve_emulator", "EmulatorHandle", "RecordedRequest"]
