"""Embedded emulator of the Hermes proxy (and of an OpenAI-compatible upstream): ``with serve_emulator(profile=…,
scenario=…, seed=…) as emu:``, ``emu`` is the endpoint (``http://127.0.0.1:<port>/v1``) and ``emu.requests`` what
it received (Authorization redacted). A request's ``X-Hermes-Emulator-Scenario: <name>`` overrides the scenario (the
real proxy forwards it to its upstream too)."""

from .app import EmulatorHandle, RecordedRequest, create_app, serve_emulator
from .scenarios import ALL_SCENARIOS, PROFILES, PROXY_SCENARIOS, SCENARIO_HEADER, SCENARIOS, UPSTREAM_SCENARIOS

__all__ = ["PROFILES", "SCENARIOS", "PROXY_SCENARIOS", "UPSTREAM_SCENARIOS", "ALL_SCENARIOS", "SCENARIO_HEADER",
           "create_app", "serve_emulator", "EmulatorHandle", "RecordedRequest"]
