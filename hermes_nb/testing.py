"""pytest plugin (entry point ``pytest11: hermes_nb``). ``hermes_emulator``: a running emulator for the test (an
:class:`~hermes_nb.emulator.app.EmulatorHandle`), configured by ``@pytest.mark.hermes_emulator(profile=…,
scenario=…)`` or indirect parametrisation (a scenario name or a dict of ``serve_emulator()`` arguments);
``hermes_emulator_factory``: ``factory(**serve_kwargs)`` for as many as a test needs. All are closed after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["hermes_emulator", "hermes_emulator_factory"]

MARKER = "hermes_emulator"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(**serve_kwargs): arguments for the hermes_emulator fixture "
                                       "(profile=, scenario=, seed=, models=, delay_s=, retry_after=)")


@pytest.fixture
def hermes_emulator_factory() -> Iterator[Callable[..., Any]]:
    """Start emulators on demand (``factory(profile=…, scenario=…)``); all closed at teardown."""
    from hermes_nb.emulator.app import serve_emulator  # a plugin every pytest run loads: aiohttp only when used

    started: list[Any] = []

    def factory(**kwargs: Any) -> Any:
        started.append(serve_emulator(**kwargs))
        return started[-1]

    try:
        yield factory
    finally:
        for handle in reversed(started):
            handle.close()


@pytest.fixture
def hermes_emulator(request: pytest.FixtureRequest, hermes_emulator_factory: Callable[..., Any]) -> Any:
    """One running emulator for the test (see the module docstring for configuration)."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    param = getattr(request, "param", None)
    if isinstance(param, str):
        kwargs["scenario"] = param
    elif isinstance(param, dict):
        kwargs.update(param)
    elif param is not None:
        raise TypeError(f"hermes_emulator param must be a scenario name or a dict, not {type(param).__name__}")
    return hermes_emulator_factory(**kwargs)
