"""The throwaway auth store of the rig: one ``auth.json`` per provider and state, with fresh random tokens.

Where each provider keeps its credentials is hermes-agent's own layout (``hermes_cli/auth.py``,
``agent/credential_pool.py``):

``nous``
    ``providers.nous`` (the Nous Portal OAuth state). The proxy resolves the inference URL from
    ``NOUS_INFERENCE_BASE_URL`` (the rig's environment, :func:`hermes_nb.proxy.rig.child_environment`).
``xai``
    ``credential_pool["xai-oauth"]``: one pooled OAuth entry whose ``base_url`` is the upstream the
    proxy forwards to (the xAI adapter takes the entry's ``base_url`` as is).

States: ``live`` — an unsigned JWT (``alg: none``; the proxy reads claims without verifying) with a
future ``exp`` (+24 h, beyond xAI's proactive-refresh window), so no refresh is needed; ``stale`` —
credentials the proxy must refresh first (nous: an access token that is not a JWT; xai: a JWT whose
``exp`` is an hour past), and every refresh fails on this machine: the Nous portal is a loopback port
that refuses connections, the xAI token endpoint is reached only through the rig's egress sink
(:mod:`hermes_nb.proxy.egress`); ``logged-out`` — no ``auth.json``.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hermes_nb.core.errors import RigError
from hermes_nb.core.providers import PROXY_PROVIDERS, auth_store_id

__all__ = ["STATES", "INVOKE_SCOPE", "unsigned_jwt", "auth_store_document", "check_provider"]

STATES: tuple[str, ...] = ("stale", "live", "logged-out")
INVOKE_SCOPE = "inference:invoke"
#: an hour past: an xai ``stale`` token the pool must refresh before use
_STALE_AGE_S = 3_600


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsigned_jwt(claims: Mapping[str, Any]) -> str:
    """``alg: none`` JWT with an empty signature segment."""
    header = {"alg": "none", "typ": "JWT"}
    return ".".join(
        [_b64url(json.dumps(header, separators=(",", ":")).encode()),
         _b64url(json.dumps(dict(claims), separators=(",", ":"), sort_keys=True).encode()), ""]
    )


def check_provider(provider: str) -> str:
    if provider not in PROXY_PROVIDERS:
        raise RigError(f"unknown rig provider {provider!r}; choose one of {', '.join(PROXY_PROVIDERS)}")
    return provider


def _nous(state: str, moment: datetime, ttl_s: int, refresh: str) -> dict[str, Any]:
    if state == "stale":
        nous = {"access_token": f"rig-stale-{secrets.token_urlsafe(18)}", "refresh_token": refresh,
                "token_type": "Bearer"}
    else:
        exp = moment + timedelta(seconds=ttl_s)
        token = unsigned_jwt({
            "sub": "hermes-nb-rig", "scope": INVOKE_SCOPE, "iat": int(moment.timestamp()),
            "exp": int(exp.timestamp()), "jti": secrets.token_hex(12),
        })
        nous = {"access_token": token, "refresh_token": refresh, "token_type": "Bearer",
                "scope": INVOKE_SCOPE, "expires_at": exp.isoformat()}
    return {"version": 1, "providers": {"nous": nous}}


def _xai(state: str, moment: datetime, ttl_s: int, refresh: str, base_url: str) -> dict[str, Any]:
    exp = moment + (timedelta(seconds=ttl_s) if state == "live" else -timedelta(seconds=_STALE_AGE_S))
    token = unsigned_jwt({"sub": "hermes-nb-rig", "iat": int(moment.timestamp()), "exp": int(exp.timestamp()),
                          "jti": secrets.token_hex(12)})
    entry = {"id": f"rig{secrets.token_hex(3)}", "label": "hermes-nb-rig", "auth_type": "oauth", "priority": 0,
             "source": "manual", "access_token": token, "refresh_token": refresh, "base_url": base_url,
             "expires_at": exp.isoformat()}
    return {"version": 1, "providers": {}, "credential_pool": {auth_store_id("xai"): [entry]}}


def auth_store_document(state: str, *, provider: str = "nous", base_url: str = "http://127.0.0.1:9/v1",
                        now: datetime | None = None, ttl_s: int = 86_400) -> dict[str, Any] | None:
    """The ``auth.json`` of ``provider`` in ``state`` (``None`` for logged-out). Tokens are fresh random values.

    ``base_url``: where the xai credential sends requests (the rig's upstream; nous takes it from its env).
    """
    if state not in STATES:
        raise RigError(f"unknown rig state {state!r}; choose one of {', '.join(STATES)}")
    check_provider(provider)
    if state == "logged-out":
        return None
    moment = now or datetime.now(UTC)
    refresh = f"rig-refresh-{secrets.token_urlsafe(18)}"
    if provider == "xai":
        return _xai(state, moment, ttl_s, refresh, base_url)
    return _nous(state, moment, ttl_s, refresh)
