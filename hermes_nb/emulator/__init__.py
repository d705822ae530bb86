"""Embedded emulator of the Hermes proxy and of an OpenAI-compatible upstream: ``with serve_emulator(…) as emu:``,
``emu`` is the endpoint and ``emu.requests`` what it received (docs/emulator.md).

The server (:mod:`.app`, aiohttp) loads on first use of its names, like ``hermes_nb``'s own: a job aimed at a proxy
reads the scenarios' names and headers only, and never pays for aiohttp (each kernel of the smoke is one)."""

from .scenarios import ALL_SCENARIOS, PROFILES, PROXY_SCENARIOS, SCENARIO_HEADER, SCENARIOS, UPSTREAM_SCENARIOS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .app import EmulatorHandle, RecordedRequest, create_app, serve_emulator

__all__ = ["PROFILES", "SCENARIOS", "PROXY_SCENARIOS", "UPSTREAM_SCENARIOS", "ALL_SCENARIOS", "SCENARIO_HEADER",
           "create_app", "serve_emulator", "EmulatorHandle", "RecordedRequest"]
_SERVER = __all__[6:]


def __getattr__(name: str) -> object:
    if name not in _SERVER:
        raise AttributeError(f"module 'hermes_nb.emulator' has no attribute {name!r}")
    from . import app  # the server's names only: see the docstring

    value = getattr(app, name)
    globals()[name] = value
    return value
