"""The throwaway auth store of the rig: one ``auth.json`` per provider and state, with fresh random tokens.

Where each provider keeps its credentials is hermes-agent's own layout (``hermes_cli/auth.py``,
``agent/credential_pool.py``):

``nous``
    ``providers.nous`` (the Nous Portal OAuth state). The proxy resolves the inference URL from
    ``NOUS_INFERENCE_BASE_URL`` (the rig's environment, :func:`hermes_nb.rig.rig.child_environment`).
``xai``
    ``credential_pool["xai-oauth"]``: one pooled OAuth entry whose ``base_url`` is the upstream the
    proxy forwards to (the xAI adapter takes the entry's ``base_url`` as is).

States: ``challenge`` (nous) — a free-tier guest (``auth_method: anonymous``, an expired ``agent_key``, no refresh
token) whose credential exchange at the portal is answered with the browser challenge
(:class:`hermes_nb.rig.egress.FakePortal`): hermes-agent 0.22 relays "Finish the quick check in your browser, then
try again." as 401 ``upstream_auth_failed``; ``live`` — an unsigned JWT (``alg: none``; the proxy reads claims
without verifying) with a future ``exp`` (+24 h, beyond xAI's proactive-refresh window), so no refresh is needed;
``stale`` —
credentials the proxy must refresh first (nous: an access token that is not a JWT; xai: a JWT whose
``exp`` is an hour past), and every refresh fails on this machine: the Nous portal is a loopback port
that refuses connections, the xAI token endpoint is reached only through the rig's egress sink
(:mod:`hermes_nb.rig.egress`); ``logged-out`` — no ``auth.json``.
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

STATES: tuple[str, ...] = ("stale", "live", "logged-out", "challenge")
INVOKE_SCOPE = "inference:invoke"
#: an hour past: an xai ``stale`` token the pool must refresh before use
_STALE_AGE_S = 3_600
#: long past: the guest's ``agent_key`` must be exchanged again at the portal
_PAST = "2020-01-01T00:00:00+00:00"


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


def _guest(portal_url: str) -> dict[str, Any]:
    """A Nous free-tier guest (hermes-agent 0.22's ``auth_method: anonymous``) whose key expired long ago."""
    key = unsigned_jwt({"sub": "hermes-nb-rig", "scope": INVOKE_SCOPE, "account_tier": "anonymous", "exp": 1577836800,
                        "jti": secrets.token_hex(12)})
    nous = {"auth_method": "anonymous", "account_tier": "anonymous", "anon_token": f"anon_{secrets.token_urlsafe(18)}",
            "client_id": "nas-anonymous", "portal_base_url": portal_url, "welcome_claim": True, "access_token": key,
            "agent_key": key, "token_type": "Bearer", "scope": INVOKE_SCOPE, "expires_at": _PAST,
            "agent_key_expires_at": _PAST}
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
                        now: datetime | None = None, ttl_s: int = 86_400,
                        portal_url: str = "http://127.0.0.1:9") -> dict[str, Any] | None:
    """The ``auth.json`` of ``provider`` in ``state`` (``None`` for logged-out). Tokens are fresh random values.

    ``base_url``: where the xai credential sends requests (the rig's upstream; nous takes it from its env);
    ``portal_url``: the guest's portal (``challenge``).
    """
    if state not in STATES:
        raise RigError(f"unknown rig state {state!r}; choose one of {', '.join(STATES)}")
    check_provider(provider)
    if state == "challenge" and provider != "nous":
        raise RigError("the challenge state is Nous Portal's free tier: use --provider nous")
    if state == "logged-out":
        return None
    if state == "challenge":
        return _guest(portal_url)
    moment = now or datetime.now(UTC)
    refresh = f"rig-refresh-{secrets.token_urlsafe(18)}"
    if provider == "xai":
        return _xai(state, moment, ttl_s, refresh, base_url)
    return _nous(state, moment, ttl_s, refresh)
