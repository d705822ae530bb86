"""Is an endpoint safe to send the bearer to? A plain-http endpoint that is not loopback is not.

Standard library only (the smoke runner imports this before pydantic or httpx are loaded).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "plain_http_warning"]


def is_loopback_host(host: str) -> bool:
    """``localhost`` (and ``*.localhost``) or a loopback IP literal (127.0.0.0/8, ::1)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http_warning(endpoint: str | None) -> str | None:
    """A warning for a plain-http endpoint whose host is not loopback, else None.

    The bearer (and, through the proxy, the subscription's traffic) would cross the network unencrypted.
    """
    if not endpoint:
        return None
    try:
        url = urlsplit(endpoint.strip())
        host = url.hostname or ""
    except ValueError:
        return None
    if url.scheme.lower() != "http" or not host or is_loopback_host(host):
        return None
    return (f"endpoint {endpoint} is plain http to {host}, which is not loopback: the bearer and the "
            "subscription's traffic would cross the network unencrypted (use https, or the proxy on 127.0.0.1)")
