"""The TLS context a client gets for its endpoint: built once per process, never per client.

httpx builds a context for every ``httpx.Client`` by loading the CA bundle
(~25 ms of CPU each; a notebook makes several clients). An ``https``
endpoint gets one verifying context, built once per process; a plain
``http`` endpoint (the loopback proxy) gets a context that trusts no
certificate at all — such a client never negotiates TLS (it follows no
redirects), and if it ever did, verification would fail rather than pass.
"""

from __future__ import annotations

import functools
import ssl

import httpx

__all__ = ["tls_context"]


def tls_context(endpoint: str) -> ssl.SSLContext:
    """The context for a client of ``endpoint`` (see the module docstring)."""
    return _verifying() if endpoint.lower().startswith("https:") else _trusting_nothing()


@functools.cache
def _verifying() -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=False)


@functools.cache
def _trusting_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # certificate and host name checks on, no CA loaded
