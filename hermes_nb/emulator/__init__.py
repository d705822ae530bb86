"""Embedded emulator of the Hermes proxy (and of an OpenAI-compatible upstream).

``PROFILES``/``SCENARIOS`` import without aiohttp; ``create_app`` and ``serve``
load the aiohttp application on first use.

    from hermes_nb.emulator import serve
    with serve(profile="hermes-agent", scenario="ok", seed=0) as emu:
        emu.endpoint   # "http://127.0.0.1:<port>/v1" (the handle is also that string)
        emu.requests   # what the emulator received, Authorization redacted

Per request, the header ``X-Hermes-Emulator-Scenario: <name>`` overrides the
scenario (the real proxy forwards it to its upstream too).
"""

from __future__ import annotations

import importlib
from typing import Any

from .scenarios import ALL_SCENARIOS, PROFILES, PROXY_SCENARIOS, SCENARIO_HEADER, SCENARIOS, UPSTREAM_SCENARIOS

__all__ = ["PROFILES", "SCENARIOS", "PROXY_SCENARIOS", "UPSTREAM_SCENARIOS", "ALL_SCENARIOS", "SCENARIO_HEADER",
           "create_app", "serve", "EmulatorHandle", "RecordedRequest"]

#: name -> (module, attribute)
_LAZY = {
    "create_app": ("app", "create_app"), "RecordedRequest": ("app", "RecordedRequest"),
    "serve": ("server", "serve"), "EmulatorHandle": ("server", "EmulatorHandle"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'hermes_nb.emulator' has no attribute {name!r}")
    module, attr = target
    value = getattr(importlib.import_module(f"hermes_nb.emulator.{module}"), attr)
    globals()[name] = value
    return value
