"""What answers at an endpoint: hermes_nb's own emulator, or something else; and which hermes-agent.

The promotion gate only accepts live receipts, so pointing ``--endpoint`` at an
emulator must not produce one: :func:`detect_emulator` asks. A live receipt names the
hermes-agent version behind it: :func:`hermes_agent_version` asks ``/health``, then the
local ``hermes`` executable, and says ``unknown`` otherwise.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from hermes_nb.emulator.scenarios import SCENARIO_HEADER

if TYPE_CHECKING:
    import httpx  # annotations only: the client imports it when a request is made

__all__ = ["PROBE_SCENARIO", "UNKNOWN_VERSION", "detect_emulator", "hermes_agent_version"]

UNKNOWN_VERSION = "unknown"
#: ``/health`` keys that could carry the proxy's version (no release so far sends one)
_HEALTH_VERSION_KEYS = ("hermes_agent_version", "hermes_version", "version")

#: a scenario name no emulator knows: hermes_nb's emulator answers it with 400 ``unknown_scenario``
PROBE_SCENARIO = "hermes-nb-target-check"


def detect_emulator(endpoint: str, *, auth_token: str | None = None, transport: httpx.BaseTransport | None = None,
                    deadline_s: float = 5.0) -> str | None:
    """Evidence that ``endpoint`` answers from hermes_nb's emulator, else None.

    ``GET /models`` naming an unknown scenario in ``X-Hermes-Emulator-Scenario``: the emulator (every
    profile) answers 400 ``unknown_scenario``; the real proxy forwards the header to its upstream, so a
    real proxy in front of the emulator (the rig) is caught too, while a real upstream ignores it. The
    hermes-agent profile is byte-identical to the real proxy otherwise (Server header, ``/health``), so
    nothing else tells them apart. Unreachable or any other answer: None.
    """
    from hermes_nb.wire.client import HermesClient

    with HermesClient(endpoint, auth_token=auth_token, transport=transport) as client:
        exchange = client.models(headers={SCENARIO_HEADER: PROBE_SCENARIO}, deadline_s=deadline_s)
    code = exchange.envelope.code if exchange.envelope is not None else None
    if exchange.status == 400 and code == "unknown_scenario":
        return (f"GET {client.endpoint}/models with {SCENARIO_HEADER}: {PROBE_SCENARIO} answered 400 "
                "unknown_scenario: the answers come from hermes_nb's emulator (directly or behind a proxy)")
    return None


def _is_loopback_url(endpoint: str) -> bool:
    from urllib.parse import urlsplit

    from hermes_nb.core.endpoint_safety import is_loopback_host

    try:
        return is_loopback_host(urlsplit(endpoint).hostname or "")
    except ValueError:
        return False


def hermes_agent_version(endpoint: str, *, hermes_bin: str | os.PathLike[str] | None = None,
                         transport: httpx.BaseTransport | None = None,
                         deadline_s: float = 2.0) -> tuple[str, str | None]:
    """``(version, source)`` of the hermes-agent behind ``endpoint``; ``("unknown", None)`` when it cannot be known.

    First ``GET /health`` (host root) if it reports a version; then, for a loopback endpoint only,
    the local ``hermes`` executable (``hermes_bin`` or the usual lookup); never raises.
    """
    from hermes_nb.core.errors import HermesError
    from hermes_nb.proxy import executable
    from hermes_nb.wire.client import HermesClient

    try:
        client = HermesClient(endpoint, transport=transport, connect_timeout_s=min(1.0, deadline_s))
    except HermesError:  # not a valid endpoint
        return UNKNOWN_VERSION, None
    with client:
        answer = client.health(deadline_s=deadline_s)
    body = answer.json_body if answer.status == 200 else None
    if isinstance(body, dict):
        for key in _HEALTH_VERSION_KEYS:
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip(), "/health"
    if not _is_loopback_url(client.endpoint):
        return UNKNOWN_VERSION, None  # a local executable says nothing about a remote proxy
    try:
        binary = executable.find_hermes_bin(hermes_bin)
    except HermesError:
        binary = None
    version = executable.hermes_version(binary) if binary is not None else None
    return (version, str(binary)) if version else (UNKNOWN_VERSION, None)
