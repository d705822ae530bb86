"""Hermetic tests: no proxy env, no Hermes env, no user ~/.hermes."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# `make fuzz`: pytest --hypothesis-profile=fuzz (tests/test_fuzz.py sizes itself from the profile)
settings.register_profile("fuzz", max_examples=4000, deadline=None)

_CLEAR_PREFIXES = ("HERMES_", "NOUS_")
_CLEAR_NAMES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
                "GITHUB_STEP_SUMMARY"}  # a test run inside GitHub Actions must not write the job summary


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in list(os.environ):
        upper = name.upper()
        if upper.startswith(_CLEAR_PREFIXES) or upper in _CLEAR_NAMES:
            monkeypatch.delenv(name, raising=False)
    # Anything that would default to ~/.hermes lands in a throwaway directory instead.
    monkeypatch.setenv("HERMES_HOME", str(tmp_path_factory.mktemp("hermes-home")))
    # per-version hermes-agent venvs (hermes-nb matrix) never land in the user's cache dir
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path_factory.mktemp("hermes-nb-cache")))
