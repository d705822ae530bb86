"""pytest plugin (entry point ``pytest11: hermes_nb``): fixtures for hermes_nb users.

Importing this module stays cheap and starts nothing: aiohttp and the emulator
load inside the fixtures.

``hermes_emulator``
    A running emulator (function scope), closed after the test. Default: profile
    ``hermes-agent``, scenario ``ok``, seed 0. Configure it with a marker::

        @pytest.mark.hermes_emulator(profile="seed", scenario="rate-limited")
        def test_x(hermes_emulator): ...

    or indirect parametrisation (a scenario name or a dict of ``serve_emulator()`` arguments)::

        @pytest.mark.parametrize("hermes_emulator", ["ok", {"profile": "upstream"}], indirect=True)

    The value is an :class:`~hermes_nb.emulator.EmulatorHandle`: a ``str`` equal to the
    endpoint, with ``.endpoint``, ``.base_url``, ``.requests``, ``.clear()``.

``hermes_emulator_factory``
    ``factory(**serve_kwargs)`` starts as many emulators as a test needs; all are closed after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hermes_nb.emulator import EmulatorHandle

__all__ = ["hermes_emulator", "hermes_emulator_factory"]

MARKER = "hermes_emulator"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**serve_kwargs): arguments for the hermes_emulator fixture "
        "(profile=, scenario=, seed=, models=, delay_s=, retry_after=)",
    )


@pytest.fixture
def hermes_emulator_factory() -> Iterator[Callable[..., EmulatorHandle]]:
    """Start emulators on demand (``factory(profile=…, scenario=…)``); all closed at teardown."""
    from hermes_nb.emulator import serve_emulator

    started: list[EmulatorHandle] = []

    def factory(**kwargs: Any) -> EmulatorHandle:
        handle = serve_emulator(**kwargs)
        started.append(handle)
        return handle

    try:
        yield factory
    finally:
        for handle in reversed(started):
            handle.close()


@pytest.fixture
def hermes_emulator(request: pytest.FixtureRequest,
                    hermes_emulator_factory: Callable[..., EmulatorHandle]) -> EmulatorHandle:
    """One running emulator for the test (see the module docstring for configuration)."""
    kwargs: dict[str, Any] = {}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        kwargs.update(marker.kwargs)
    param = getattr(request, "param", None)
    if isinstance(param, str):
        kwargs["scenario"] = param
    elif isinstance(param, dict):
        kwargs.update(param)
    elif param is not None:
        raise TypeError(f"hermes_emulator param must be a scenario name or a dict, not {type(param).__name__}")
    return hermes_emulator_factory(**kwargs)
