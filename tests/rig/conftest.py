"""The real proxies the rig tests start, and one shared rig per (release, state, provider) for the whole session.

Each release lives in its own side venv, built from a lock file by the Makefile (``make rig-venv``,
``make release-venvs``); a test whose release is missing is skipped with the make target that builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from hermes_nb.rig.rig import RigHandle, real_proxy
from tests.helpers import ROOT

#: release → (its executable, the make target that builds its venv)
RELEASES: dict[str, tuple[Path, str]] = {
    "0.19": (ROOT / ".venv-hermes" / "bin" / "hermes", "make rig-venv"),
    "iot-0.22": (ROOT / ".venv-hermes-iot-0.22" / "bin" / "hermes", "make release-venvs"),
    "axisrow": (ROOT / ".venv-hermes-axisrow" / "bin" / "hermesx", "make release-venvs"),
}


def release_bin(name: str) -> Path:
    """The executable of a release, or a skip naming the make target that builds it."""
    path, target = RELEASES[name]
    if not path.is_file():
        pytest.skip(f"no {path.relative_to(ROOT)}: run `{target}`")
    return path


@pytest.fixture(scope="session")
def shared_rig() -> Iterator[Callable[..., RigHandle]]:
    """``shared_rig(release, state, provider="nous")``: a running real proxy, started once per session and kept for
    every test that only reads from it (a test that changes a rig's state, e.g. parks its credential, starts its
    own)."""
    started: dict[tuple[str, str, str], RigHandle] = {}
    with ExitStack() as stack:
        def get(release: str, state: str, provider: str = "nous") -> RigHandle:
            key = (release, state, provider)
            if key not in started:
                started[key] = stack.enter_context(real_proxy(state, provider=provider,
                                                              hermes_bin=release_bin(release)))
            return started[key]

        yield get
