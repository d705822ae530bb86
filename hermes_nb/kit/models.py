"""The models a proxy lists, asked once per endpoint per session; an unlisted model is flagged.

The console offers the listed models in its model field and flags an unlisted one before Send;
``%%hermes_chat`` warns about it. Both ask ``GET /models`` at most once per endpoint for the session
(:class:`ModelCatalog`), and take any ``/models`` answer they see anyway (the models route, the adapter
check) instead of asking again. An endpoint that does not answer a model list is *unknown*: nothing is
flagged then — the adapter check is where a missing list is judged.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = ["ModelCatalog", "models_of", "unlisted_note"]

#: how long the one ``GET /models`` of a session may take
LOOKUP_DEADLINE_S = 5.0


def models_of(exchange: Any) -> list[str] | None:
    """The model ids of a ``/models`` answer (None: not a model list)."""
    if exchange is None or not exchange.ok_status:
        return None
    body = exchange.json_body
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id") is not None]


def unlisted_note(model: str, models: Sequence[str], endpoint: str) -> str:
    listed = ", ".join(models[:8]) + (f", … ({len(models)} in all)" if len(models) > 8 else "")
    return f"model {model!r} is not listed by the proxy at {endpoint} (listed: {listed or 'none'})"


class ModelCatalog:
    """Endpoint → the models it lists (None: asked, no list). Thread-safe; one lookup per endpoint."""

    def __init__(self) -> None:
        self._lists: dict[str, list[str] | None] = {}
        self._lock = threading.Lock()
        self._asking: dict[str, threading.Event] = {}

    def known(self, endpoint: str) -> list[str] | None:
        with self._lock:
            return self._lists.get(endpoint.rstrip("/"))

    def asked(self, endpoint: str) -> bool:
        with self._lock:
            return endpoint.rstrip("/") in self._lists

    def feed(self, endpoint: str, models: Sequence[str] | None) -> None:
        """Record a ``/models`` answer seen elsewhere (the models route, the adapter check)."""
        if models is None:
            return
        with self._lock:
            self._lists[endpoint.rstrip("/")] = list(models)

    def lookup(self, config: HermesProxyRuntimeConfig, *, deadline_s: float = LOOKUP_DEADLINE_S) -> list[str] | None:
        """The models ``config.endpoint`` lists: asked once (``GET /models``), then from the cache."""
        from hermes_nb.wire.client import HermesClient

        key = config.endpoint.rstrip("/")
        with self._lock:
            if key in self._lists:
                return self._lists[key]
            waiting = self._asking.get(key)
            if waiting is None:
                self._asking[key] = threading.Event()
        if waiting is not None:  # another thread is asking: its answer is ours
            waiting.wait(deadline_s + 1.0)
            return self.known(key)
        models: list[str] | None = None
        try:
            with HermesClient(config) as client:
                models = models_of(client.models(deadline_s=deadline_s))
        finally:
            with self._lock:
                self._lists.setdefault(key, models)
                self._asking.pop(key).set()
        return self.known(key)

    def flag(self, endpoint: str, model: str) -> str | None:
        """Why ``model`` looks wrong for ``endpoint`` (None: listed, or no list known)."""
        models = self.known(endpoint)
        if models is None or not model or model in models:
            return None
        return unlisted_note(model, models, endpoint)
