"""Is an endpoint safe to send the bearer to? A plain-http endpoint that is not loopback is not.

Standard library only (the smoke runner imports this before pydantic or httpx are loaded).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "plain_http_warning"]


def is_loopback_host(host: str) -> bool:
    """``localhost`` (and ``*.localhost``) or a loopback address however it is written: 127.0.0.0/8, ``::1``, an
    IPv4-mapped ``::ffff:127.0.0.1``, and the short and numeric forms the system's resolver (``inet_aton``, what
    a connect to that host uses) reads as 127.x: ``127.1``, ``2130706433``, ``0x7f.1``, ``0177.0.0.1``."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not host or not all(c in "0123456789abcdefx." for c in host):
            return False
        try:  # the classic inet_aton forms: one to four parts, decimal, octal (0…) or hex (0x…)
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


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
