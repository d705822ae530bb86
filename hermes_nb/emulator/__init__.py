"""Embedded emulator of the Hermes proxy and of an OpenAI-compatible upstream: ``with serve_emulator(…) as emu:``,
``emu`` is the endpoint and ``emu.requests`` what it received (docs/emulator.md)."""

from .app import EmulatorHandle, RecordedRequest, create_app, serve_emulator
from .scenarios import ALL_SCENARIOS, PROFILES, PROXY_SCENARIOS, SCENARIO_HEADER, SCENARIOS, UPSTREAM_SCENARIOS

__all__ = ["PROFILES", "SCENARIOS", "PROXY_SCENARIOS", "UPSTREAM_SCENARIOS", "ALL_SCENARIOS", "SCENARIO_HEADER",
           "create_app", "serve_emulator", "EmulatorHandle", "RecordedRequest"]
