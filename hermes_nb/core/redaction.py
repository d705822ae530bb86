"""Redaction: secrets never reach an output.

One :class:`Redactor` knows the literal secrets of a run (auth tokens,
Authorization values, auth-store contents) and the *shapes* of secrets
(:data:`SHAPES`: JWTs, bearer credentials, ``sk-`` keys). Everything written by
hermes_nb — artifacts, logs, receipts, JSON output — goes through one. The
streaming redactor (:mod:`hermes_nb.core.stream_redaction`) uses the same
shapes, each with the pattern of a tail that could still grow into it.

Which names hold a secret is one rule, :func:`is_secret_name` (:data:`SECRET_NAME_RE`): a header such as
``X-Auth-Token`` or ``Private-Token`` is masked however few lists name it, and its value is a known secret
of every redactor built from the config (:meth:`~hermes_nb.core.config.HermesProxyRuntimeConfig.secrets`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REDACTED",
    "SENSITIVE_HEADERS",
    "SECRET_NAME_RE",
    "is_secret_name",
    "PUBLIC_TOKENS",
    "SecretShape",
    "SHAPES",
    "JWT_RE",
    "Redactor",
    "redact_headers",
    "find_secrets",
    "auth_store_secrets",
]

REDACTED = "<redacted>"
#: a name that looks like it holds a credential (a header, an auth store's key): the one rule
SECRET_NAME_RE = re.compile(r"(?i)token|secret|passw|key|auth|cookie|session|signature|credential|jwt"
                            r"|code_verifier|device_code")
#: well-known credential headers, for the docs and the tests: each matches :data:`SECRET_NAME_RE`, which decides
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
     "x-auth-token", "x-goog-api-key", "private-token", "x-amz-security-token"}
)
#: The placeholder bearers are not secrets; they are the documented defaults.
PUBLIC_TOKENS = frozenset({"hermes-proxy", "probe", "x", REDACTED})


@dataclass(frozen=True)
class SecretShape:
    """A kind of secret recognised by its look.

    ``pattern``: the whole secret; when it has groups, only the last group is
    the secret (``Bearer <token>`` keeps ``Bearer ``). ``accept``: a further
    test of that secret part (a bearer value must look like a token, not a
    word). ``growing``: a text *tail* that could still become this shape when
    more text arrives.
    """

    name: str
    pattern: re.Pattern[str]
    growing: tuple[re.Pattern[str], ...]
    accept: Callable[[str], bool] | None = None
    #: a cheap test that is False only when ``text`` cannot hold this shape: the regex scan is skipped
    #: (a 10 MB prompt is redacted in milliseconds, not a second per shape)
    present: Callable[[str], bool] | None = None

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        """The matches that are secrets (``accept`` passed)."""
        if self.present is not None and not self.present(text):
            return
        for match in self.pattern.finditer(text, pos, len(text) if endpos is None else endpos):
            if self.accept is None or self.accept(match.group(match.lastindex or 0)):
                yield match

    def search(self, text: str) -> bool:
        return next(self.finditer(text), None) is not None

    def sub(self, text: str) -> str:
        if self.present is not None and not self.present(text):
            return text
        out, last = [], 0
        for match in self.finditer(text):
            start = match.start(match.lastindex or 0)
            out += [text[last:start], REDACTED]
            last = match.end(match.lastindex or 0)
        return "".join(out) + text[last:] if out else text


#: three base64url segments, the first two starting like a JSON object header/claims
JWT_RE = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER_RE = re.compile(r"(?i)(\bbearer\s+)(?!<redacted>)([A-Za-z0-9._~+/=-]{6,})")
_TOKEN_MARKS = re.compile(r"[0-9._~+/=-]|.[A-Z]")


#: hyphenated lower-case words (``token-less``, ``pass-through``): prose, however long
_HYPHENATED_WORDS = re.compile(r"[a-z]{1,12}(?:-[a-z]{1,12})+")


def _token_like(value: str) -> bool:
    """A credential, not a word: a digit, a symbol or an inner capital in it, or 16+ characters.

    ``Bearer handling``, ``Bearer Authentication`` and ``bearer pass-through`` are prose;
    ``Bearer eyJ…``, ``Bearer sk-…``, ``Bearer abcDEF…`` and ``Bearer 0a1b…`` are credentials.
    """
    if _HYPHENATED_WORDS.fullmatch(value.rstrip(".,;:")):
        return False
    return len(value) >= 16 or bool(_TOKEN_MARKS.search(value))


def _has_jwt_start(text: str) -> bool:
    return "eyJ" in text


def _has_bearer(text: str, window: int = 1 << 16) -> bool:
    """``bearer`` in any case (no character but b/B, e/E, a/A, r/R matches those letters case-insensitively).

    Lower-cased a window at a time: a long text is not copied whole.
    """
    if len(text) <= window:
        return "bearer" in text.lower()
    return any("bearer" in text[i:i + window + 5].lower() for i in range(0, len(text), window))


def _has_sk(text: str) -> bool:
    return "sk-" in text


SHAPES: tuple[SecretShape, ...] = (
    SecretShape("JWT-shaped string", JWT_RE, (re.compile(r"\be(?:y(?:J[A-Za-z0-9_.-]*)?)?$"),),
                present=_has_jwt_start),
    SecretShape("bearer credential", _BEARER_RE, (
        re.compile(r"(?i)\bb(?:e(?:a(?:r(?:e(?:r)?)?)?)?)?$"),
        re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]*$"),
    ), accept=_token_like, present=_has_bearer),
    SecretShape("sk- style key", re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
                (re.compile(r"\bs(?:k(?:-[A-Za-z0-9_-]*)?)?$"),), present=_has_sk),
)


def is_secret_name(name: str) -> bool:
    """True for a header or key name that looks like it holds a credential (:data:`SECRET_NAME_RE`)."""
    return SECRET_NAME_RE.search(name) is not None


def _header_shaped(name: str) -> bool:
    """A key of any document that names a header (``x-auth-token``, ``cookie``), not a field (``auth_state``)."""
    return "-" in name or name in SENSITIVE_HEADERS


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Lower-case header names; replace the values of credential-named ones (keeping the auth scheme)."""
    out: dict[str, str] = {}
    for key, value in headers.items():
        k = key.lower()
        if is_secret_name(k):
            scheme = value.split(" ", 1)[0] if " " in value else ""
            out[k] = f"{scheme} {REDACTED}".strip()
        else:
            out[k] = value
    return out


def _usable(secrets: Iterable[str]) -> set[str]:
    return {s for s in secrets if s and s not in PUBLIC_TOKENS and len(s) >= 4}


class Redactor:
    """Replace known secret values and secret-shaped strings with ``<redacted>``."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: bool = True) -> None:
        # longest first so a token inside a longer secret does not leave a tail
        self._secrets = sorted(_usable(secrets), key=len, reverse=True)
        self._shapes = shapes

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets, shapes={self._shapes})"

    @property
    def secrets(self) -> list[str]:
        return list(self._secrets)

    @property
    def shapes(self) -> tuple[SecretShape, ...]:
        return SHAPES if self._shapes else ()

    def add(self, *secrets: str) -> None:
        self._secrets = sorted(set(self._secrets) | _usable(secrets), key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        for shape in self.shapes:
            value = shape.sub(value)
        return value

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like structure (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                key = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and isinstance(v, str) and _header_shaped(k.lower()) and is_secret_name(k):
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
        found.extend(shape.name for shape in SHAPES if shape.search(text))
    return found


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
        elif isinstance(node, str) and len(node) >= 8 and (is_secret_name(key) or JWT_RE.search(node)):
            out.append(node)

    walk(document)
    return out
