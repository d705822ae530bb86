"""The client's TLS context (hermes_nb.wire.tls): built once per process; a plain-http endpoint trusts nothing."""

from __future__ import annotations

import ssl

from hermes_nb.wire.tls import tls_context


def test_an_https_endpoint_verifies_with_one_context_per_process() -> None:
    ctx = tls_context("https://proxy.example/v1")
    assert ctx is tls_context("HTTPS://other.example/v1")
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname and ctx.cert_store_stats()["x509_ca"] > 0


def test_a_plain_http_endpoint_gets_a_context_that_trusts_no_certificate() -> None:
    ctx = tls_context("http://127.0.0.1:8645/v1")
    assert ctx is tls_context("http://localhost:1/v1") and ctx is not tls_context("https://a.example/v1")
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname  # would refuse any server, never accept one
    assert ctx.cert_store_stats()["x509_ca"] == 0

