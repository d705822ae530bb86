"""Secrets never reach an output: everything hermes_nb writes goes through a :class:`Redactor` (a run's literal
secrets and the :data:`SHAPES` of secrets) or, for text arriving in pieces, a :class:`StreamRedactor`."""

from __future__ import annotations

import bisect
import json
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "<redacted>"
#: a name that looks like it holds a credential (a header, an auth store's key): the one rule
_SECRET_NAME_RE = re.compile(r"(?i)token|secret|passw|key|auth|cookie|session|signature|credential|jwt"
                             r"|code_verifier|device_code")
#: well-known credential headers (each matches the rule, which decides)
SENSITIVE_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
                               "x-auth-token", "x-goog-api-key", "private-token", "x-amz-security-token"})
#: the placeholder bearers are the documented defaults, not secrets
_PUBLIC_TOKENS = frozenset({"hermes-proxy", "probe", "x", REDACTED})


@dataclass(frozen=True)
class _Shape:
    """A secret known by its look (only ``pattern``'s last group is secret); ``growing``: a text tail that could
    still become one; ``present``: a cheap pre-test (a 10 MB prompt is redacted in milliseconds)."""

    name: str
    pattern: re.Pattern[str]
    growing: tuple[re.Pattern[str], ...]
    present: Callable[[str], bool]
    accept: Callable[[str], bool] | None = None

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        if not self.present(text):
            return
        for match in self.pattern.finditer(text, pos, len(text) if endpos is None else endpos):
            if self.accept is None or self.accept(match.group(match.lastindex or 0)):
                yield match

    def sub(self, text: str) -> str:
        if not self.present(text):  # the common case, without a generator (P5)
            return text
        out, last = [], 0
        for match in self.finditer(text):
            out += [text[last:match.start(match.lastindex or 0)], REDACTED]
            last = match.end(match.lastindex or 0)
        return "".join(out) + text[last:] if out else text


#: three base64url segments, the first two starting like a JSON object header/claims
_JWT_RE = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_TOKEN_MARKS = re.compile(r"[0-9._~+/=-]|.[A-Z]")
#: hyphenated lower-case words (``token-less``, ``pass-through``): prose, however long
_HYPHENATED_WORDS = re.compile(r"[a-z]{1,12}(?:-[a-z]{1,12})+")


def _token_like(value: str) -> bool:
    """A credential, not a word (``Bearer handling``): a digit, a symbol, an inner capital, or 16+ characters."""
    if _HYPHENATED_WORDS.fullmatch(value.rstrip(".,;:")):
        return False
    return len(value) >= 16 or bool(_TOKEN_MARKS.search(value))


def _has_bearer(text: str, window: int = 1 << 16) -> bool:
    """``bearer`` in any case, lower-cased a window at a time (a long text is not copied whole)."""
    if len(text) <= window:
        return "bearer" in text.lower()
    return any("bearer" in text[i:i + window + 5].lower() for i in range(0, len(text), window))


SHAPES: tuple[_Shape, ...] = (
    _Shape("JWT-shaped string", _JWT_RE, (re.compile(r"\be(?:y(?:J[A-Za-z0-9_.-]*)?)?$"),),
           lambda text: "eyJ" in text),
    _Shape("bearer credential", re.compile(r"(?i)(\bbearer\s+)(?!<redacted>)([A-Za-z0-9._~+/=-]{6,})"), (
        re.compile(r"(?i)\bb(?:e(?:a(?:r(?:e(?:r)?)?)?)?)?$"),
        re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]*$"),
    ), _has_bearer, _token_like),
    _Shape("sk- style key", re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), (re.compile(r"\bs(?:k(?:-[A-Za-z0-9_-]*)?)?$"),),
           lambda text: "sk-" in text),
)


def is_secret_name(name: str) -> bool:
    return _SECRET_NAME_RE.search(name) is not None


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Lower-case header names; replace the values of credential-named ones (keeping the auth scheme)."""
    out: dict[str, str] = {}
    for key, value in headers.items():
        scheme = value.split(" ", 1)[0] if " " in value else ""
        out[key.lower()] = f"{scheme} {REDACTED}".strip() if is_secret_name(key) else value
    return out


class Redactor:
    """Replace known secret values and secret-shaped strings with ``<redacted>``."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: bool = True) -> None:
        self._secrets: list[str] = []
        self._shapes = shapes
        self.add(*secrets)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets, shapes={self._shapes})"

    @property
    def secrets(self) -> list[str]:
        return list(self._secrets)

    @property
    def shapes(self) -> tuple[_Shape, ...]:
        return SHAPES if self._shapes else ()

    def add(self, *secrets: str) -> None:
        usable = {s for s in secrets if s and s not in _PUBLIC_TOKENS and len(s) >= 4}
        self._secrets = sorted(set(self._secrets) | usable, key=len, reverse=True)  # longest first: no tail left

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, REDACTED)
        for shape in self.shapes:
            value = shape.sub(value)
        return value

    def data(self, value: Any) -> Any:
        """Every string inside a JSON-like structure redacted (keys too); a credential header's value masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                key = self.text(k) if isinstance(k, str) else k
                header = isinstance(k, str) and ("-" in k or k.lower() in SENSITIVE_HEADERS) and is_secret_name(k)
                out[key] = redact_headers({k: v})[k.lower()] if header and isinstance(v, str) else self.data(v)
            return out
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def find(self, text: str) -> list[str]:
        return find_secrets(text, self._secrets, shapes=self._shapes)


def find_secrets(text: str, secrets: Iterable[str] = (), *, shapes: bool = True) -> list[str]:
    """Describe each secret present in ``text`` without repeating it."""
    found = [f"known secret #{i + 1} ({len(secret)} chars)"
             for i, secret in enumerate(s for s in secrets if s and s not in _PUBLIC_TOKENS) if secret in text]
    return found + [shape.name for shape in SHAPES if shapes and next(shape.finditer(text), None)]


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
        elif isinstance(node, str) and len(node) >= 8 and (is_secret_name(key) or _JWT_RE.search(node)):
            out.append(node)

    walk(document)
    return out


#: a growing shape's tail characters (with the letters matching ASCII ones case-insensitively); every whitespace
_TOKEN_CHARS = string.ascii_letters + string.digits + "._~+/=-" + "\u212a\u017f\u0131\u0130"
_SPACE_CHARS = "".join(chr(c) for c in range(0x3000 + 1) if chr(c).isspace())


def _tail_start(buffer: str) -> int:
    """The earliest place a growing shape can match ``…$`` (a few characters searched, not the whole text)."""
    run = len(buffer.rstrip(_TOKEN_CHARS))
    return max(0, len(buffer[:run].rstrip(_SPACE_CHARS)) - len("bearer"))


class StreamRedactor:
    """Feed pieces, get the redacted text safe to write now (a tail that could still become a secret is held
    back); however the text is split, the output joined equals ``redactor.text(whole)``."""

    #: characters kept before the window start, so ``\\b`` in the shapes sees the previous character
    MARGIN = 64

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.length = 0
        self.settled = 0  # raw characters already released
        self._pieces: list[str] = []
        self._window = ""  # raw[self._wstart:]
        self._wstart = 0
        self._spans: list[tuple[int, int]] = []

    @property
    def raw(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def adopt(self, whole: str) -> bool:
        """Hold ``whole`` instead of the pieces if it equals them (a long answer is not held twice)."""
        if len(whole) != self.length:
            return False
        pos = 0
        for piece in self._pieces:
            if not whole.startswith(piece, pos):
                return False
            pos += len(piece)
        self._pieces = [whole] if whole else []
        return True

    def feed(self, piece: str) -> str:
        self._pieces.append(piece)
        self._window += piece
        self.length += len(piece)
        return self._release(self.settled + self._safe_cut(self._window[self.settled - self._wstart:]))

    def flush(self) -> str:
        return self._release(self.length)

    def forget(self, before: int) -> None:
        """Text before ``before`` (and before ``settled``) will not be masked again: drop it from the window."""
        cut = min(before, self.settled) - self.MARGIN
        if cut > self._wstart:
            self._window = self._window[cut - self._wstart:]
            self._wstart = cut
            del self._spans[:max(0, bisect.bisect_left(self._spans, (cut, -1)) - 1)]

    def _text(self, start: int, end: int) -> str:
        return self._window[start - self._wstart:end - self._wstart]

    def mask(self, start: int, end: int) -> str:
        """``raw[start:end]`` with every character inside a secret replaced (one marker per secret)."""
        if end > self.settled or start < self._wstart:
            raise ValueError("mask() of text that is not settled yet or already forgotten")
        out: list[str] = []
        pos = start
        first = bisect.bisect_left(self._spans, (start, -1))
        if first and self._spans[first - 1][1] > start:
            first -= 1
        for s_start, s_end in self._spans[first:]:
            if s_start >= end:
                break
            if s_start > pos:
                out.append(self._text(pos, s_start))
            out.append(REDACTED)
            pos = max(pos, min(s_end, end))
        out.append(self._text(pos, end))
        return self.redactor.text("".join(out))

    def _release(self, upto: int) -> str:
        start = self.settled
        if upto <= start:
            return ""
        self._record_spans(start, upto)
        self.settled = upto
        return self.redactor.text(self._text(start, upto))

    def _record_spans(self, start: int, end: int) -> None:
        found: list[tuple[int, int]] = []
        window, base = self._window, self._wstart
        for secret in self.redactor.secrets:
            at = window.find(secret, start - base, end - base)
            while at != -1:
                found.append((base + at, base + at + len(secret)))
                at = window.find(secret, at + len(secret), end - base)
        for shape in self.redactor.shapes:  # only the last group is secret (``bearer <token>`` keeps its prefix)
            found.extend((base + m.start(m.lastindex or 0), base + m.end(m.lastindex or 0))
                         for m in shape.finditer(window, start - base, end - base))
        for span in sorted(found):  # merge overlaps; spans never straddle a release point
            if self._spans and span[0] < self._spans[-1][1]:
                self._spans[-1] = (self._spans[-1][0], max(self._spans[-1][1], span[1]))
            else:
                self._spans.append(span)

    def _safe_cut(self, buffer: str) -> int:
        cut = len(buffer)
        for secret in self.redactor.secrets:  # the longest tail that starts a known secret
            for size in range(min(len(secret) - 1, len(buffer)), 0, -1):
                if buffer.endswith(secret[:size]):
                    cut = min(cut, len(buffer) - size)
                    break
        tail = _tail_start(buffer)
        for shape in self.redactor.shapes:
            for pattern in shape.growing:
                if match := pattern.search(buffer, tail):
                    cut = min(cut, match.start())
        while (moved := self._straddling(buffer, cut)) is not None:  # never cut through a secret already complete
            cut = moved
        return cut

    def _straddling(self, buffer: str, cut: int) -> int | None:
        for secret in self.redactor.secrets:
            start = buffer.find(secret, max(0, cut - len(secret) + 1))
            if start != -1 and start < cut:
                return start
        for shape in self.redactor.shapes:
            for match in shape.finditer(buffer):
                if match.start() < cut < match.end():
                    return match.start()
        return None
