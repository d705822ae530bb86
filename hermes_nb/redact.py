"""Redaction: secrets never reach an output.

One :class:`Redactor` knows the literal secrets of a run (auth tokens,
Authorization values, auth-store contents) and the *shapes* of secrets
(JWTs, bearer values, ``sk-`` keys). Everything written by hermes_nb —
artifacts, logs, receipts, JSON output — goes through one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SENSITIVE_HEADERS",
    "JWT_RE",
    "Redactor",
    "redact_headers",
    "find_secrets",
    "auth_store_secrets",
]

REDACTED = "<redacted>"
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
#: three base64url segments, the first two starting like a JSON object header/claims
JWT_RE = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_SHAPES = [
    JWT_RE,
    re.compile(r"(?i)(\bbearer\s+)(?!<redacted>)([A-Za-z0-9._~+/=-]{6,})"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
]
#: The placeholder bearer is not a secret; it is the documented default.
PUBLIC_TOKENS = frozenset({"hermes-proxy", "probe", "x", REDACTED})


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Lower-case header names; replace sensitive values (keeping the auth scheme)."""
    out: dict[str, str] = {}
    for key, value in headers.items():
        k = key.lower()
        if k in SENSITIVE_HEADERS:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            out[k] = f"{scheme} {REDACTED}".strip()
        else:
            out[k] = value
    return out


class Redactor:
    """Replace known secret values and secret-shaped strings with ``<redacted>``."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: bool = True) -> None:
        uniq = {s for s in secrets if s and s not in PUBLIC_TOKENS and len(s) >= 4}
        # longest first so a token inside a longer secret does not leave a tail
        self._secrets = sorted(uniq, key=len, reverse=True)
        self._shapes = shapes

    @property
    def secrets(self) -> list[str]:
        return list(self._secrets)

    def add(self, *secrets: str) -> None:
        merged = set(self._secrets) | {s for s in secrets if s and s not in PUBLIC_TOKENS and len(s) >= 4}
        self._secrets = sorted(merged, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if self._shapes:
            value = JWT_RE.sub(REDACTED, value)
            value = _SHAPES[1].sub(lambda m: m.group(1) + REDACTED, value)
            value = _SHAPES[2].sub(REDACTED, value)
        return value

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like structure (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                key = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and k.lower() in SENSITIVE_HEADERS and isinstance(v, str):
                    out[key] = redact_headers({k: v})[k.lower()]
                else:
                    out[key] = self.data(v)
            return out
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def find(self, text: str) -> list[str]:
        """Names of the secrets (not the values) found in ``text``."""
        return find_secrets(text, self._secrets, shapes=self._shapes)


def find_secrets(text: str, secrets: Iterable[str] = (), *, shapes: bool = True) -> list[str]:
    """Describe each secret present in ``text`` without repeating it."""
    found: list[str] = []
    for i, secret in enumerate(s for s in secrets if s and s not in PUBLIC_TOKENS):
        if secret in text:
            found.append(f"known secret #{i + 1} ({len(secret)} chars)")
    if shapes:
        if JWT_RE.search(text):
            found.append("JWT-shaped string")
        if _SHAPES[1].search(text):
            found.append("bearer credential")
        if _SHAPES[2].search(text):
            found.append("sk- style key")
    return found


_SECRET_KEY_RE = re.compile(r"(?i)token|secret|key|password|cookie|jwt|credential|code_verifier|device_code")


def auth_store_secrets(document: Any) -> list[str]:
    """The secret values of an auth store (``auth.json``): token/secret/key-named fields and JWTs."""
    if isinstance(document, (str, bytes)):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    out: list[str] = []

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and len(node) >= 8:
            if _SECRET_KEY_RE.search(key) or JWT_RE.search(node):
                out.append(node)

    walk(document)
    return out
