"""What answers at an endpoint: hermes_nb's own emulator, or something else.

The promotion gate only accepts live receipts, so pointing ``--endpoint`` at an
emulator must not produce one: :func:`detect_emulator` asks.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.emulator.scenarios import SCENARIO_HEADER

__all__ = ["PROBE_SCENARIO", "detect_emulator"]

#: a scenario name no emulator knows: hermes_nb's emulator answers it with 400 ``unknown_scenario``
PROBE_SCENARIO = "hermes-nb-target-check"


def detect_emulator(endpoint: str, *, auth_token: str | None = None, transport: Any = None,
                    deadline_s: float = 5.0) -> str | None:
    """Evidence that ``endpoint`` answers from hermes_nb's emulator, else None.

    ``GET /models`` naming an unknown scenario in ``X-Hermes-Emulator-Scenario``: the emulator (every
    profile) answers 400 ``unknown_scenario``; the real proxy forwards the header to its upstream, so a
    real proxy in front of the emulator (the rig) is caught too, while a real upstream ignores it. The
    hermes-agent profile is byte-identical to the real proxy otherwise (Server header, ``/health``), so
    nothing else tells them apart. Unreachable or any other answer: None.
    """
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.wire.client import HermesClient

    config = HermesProxyRuntimeConfig(endpoint=endpoint, model=PROBE_SCENARIO,
                                      **({"auth_token": auth_token} if auth_token else {}))
    with HermesClient(config, transport=transport) as client:
        exchange = client.request("GET", "/models", headers={SCENARIO_HEADER: PROBE_SCENARIO},
                                  deadline_s=deadline_s)
    code = exchange.envelope.code if exchange.envelope is not None else None
    if exchange.status == 400 and code == "unknown_scenario":
        return (f"GET {config.endpoint}/models with {SCENARIO_HEADER}: {PROBE_SCENARIO} answered 400 "
                "unknown_scenario: the answers come from hermes_nb's emulator (directly or behind a proxy)")
    return None
