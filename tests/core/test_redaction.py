"""Which names hold a secret is one rule: a header named like a credential is masked whoever lists it."""

from __future__ import annotations

import json

import pytest

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.redaction import (
    REDACTED,
    SENSITIVE_HEADERS,
    Redactor,
    auth_store_secrets,
    is_secret_name,
    redact_headers,
)

#: the names an adversarial pass found in clear, and others people put credentials under
CREDENTIAL_HEADERS = ["X-Auth-Token", "X-Goog-Api-Key", "Private-Token", "X-Amz-Security-Token", "X-Api-Key",
                      "Cookie", "X-Session-Id", "X-Signature", "X-Client-Secret", "X-Password", "Proxy-Authorization"]
PLAIN_HEADERS = ["Content-Type", "Accept", "X-Trace", "X-Hermes-Emulator-Scenario", "Keep-Alive", "User-Agent"]


@pytest.mark.parametrize("name", CREDENTIAL_HEADERS + sorted(SENSITIVE_HEADERS))
def test_a_credential_named_header_is_masked_by_every_path(name: str) -> None:
    canary = f"canary-{name.lower()}-0123456789"
    assert is_secret_name(name)
    assert redact_headers({name: f"Key {canary}"}) == {name.lower(): f"Key {REDACTED}"}
    if name.lower() in ("authorization", "host", "content-length"):
        return  # not settable in extra_headers (the bearer is auth_token)
    config = HermesProxyRuntimeConfig(model="m", extra_headers={name: canary})
    assert canary in config.secrets()  # so every Redactor built from the config masks it wherever it shows
    for text in (repr(config), config.model_dump_json(), json.dumps(config.to_document())):
        assert canary not in text
    assert Redactor().data({"headers": {name: canary}}) == {"headers": {name: REDACTED}}


@pytest.mark.parametrize("name", PLAIN_HEADERS)
def test_other_headers_stay_readable(name: str) -> None:
    assert not is_secret_name(name)
    assert redact_headers({name: "value-1"}) == {name.lower(): "value-1"}


def test_document_fields_that_merely_mention_auth_are_not_headers() -> None:
    """``auth_state`` in a receipt or ``authenticated`` in /health is a field, not a credential header."""
    doc = {"auth_state": "stale", "authenticated": True, "prompt_tokens": 3, "x-auth-token": "abcdefgh"}
    assert Redactor().data(doc) == {"auth_state": "stale", "authenticated": True, "prompt_tokens": 3,
                                    "x-auth-token": REDACTED}


def test_the_auth_store_reads_by_the_same_rule() -> None:
    store = {"providers": {"nous": {"access_token": "a" * 20, "session_key": "s" * 20, "label": "hermes-nb-rig",
                                    "base_url": "http://127.0.0.1:9/v1"}}}
    assert sorted(auth_store_secrets(store)) == ["a" * 20, "s" * 20]
