"""Fixtures of the kit's tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def models_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The endpoints ``HermesClient.models`` is called for (it still answers): how many ``GET /models`` went out."""
    from hermes_nb import HermesClient

    calls: list[str] = []
    real = HermesClient.models

    def counting(self: HermesClient, **kw: Any) -> Any:
        calls.append(self.config.endpoint)
        return real(self, **kw)

    monkeypatch.setattr(HermesClient, "models", counting)
    return calls
