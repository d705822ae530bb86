"""A request's JSON body as the bytes sent: what httpx's ``json=`` writes (compact, not ASCII-escaped), made
without a second whole copy of a long prompt.

An ordinary body is written by orjson straight to bytes (httpx builds a str, then encodes it); a body holding a
string over :data:`BIG_STRING` characters is :class:`JsonPieces`, escaped a slice at a time as it is sent, its
Content-Length counted up front. The client records the request from the object it encoded (the
request extension :data:`hermes_nb.wire.failures.SENT_JSON`), never by parsing the bytes
back. P7 in docs/performance.md measures it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["BIG_STRING", "JsonPieces", "dumps_body", "request_body"]

#: a request body with a string this long is sent in pieces (:class:`JsonPieces`), never encoded whole
BIG_STRING = 1 << 20


def request_body(obj: Any, headers: dict[str, str]) -> bytes | JsonPieces | None:
    """The content of a request with JSON body ``obj`` (None: no body); a body sent in pieces gets its
    ``content-length`` in ``headers`` (counted up front), so it is not sent chunked."""
    if obj is None:
        return None
    content = dumps_body(obj)
    if isinstance(content, JsonPieces):
        headers["content-length"] = str(len(content))
    return content


def dumps_body(obj: Any) -> bytes | JsonPieces:
    """A request body as httpx's ``json=`` encodes it (compact, not ASCII-escaped): bytes written by orjson for
    an ordinary body; a body holding a string over :data:`BIG_STRING` characters (a long prompt) as
    :class:`JsonPieces`, so it is never held whole a second time. What orjson cannot write (integers beyond 64
    bits, non-string keys) goes through :func:`json.dumps`; as with ``json=``, NaN and infinities are refused."""
    if _has_big_string(obj):
        return JsonPieces(obj)
    try:
        data = orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _dumps(obj).encode("utf-8")
    if b"null" in data and _has_non_finite(obj):  # orjson writes NaN/inf as null; json= raises
        raise ValueError("Out of range float values are not JSON compliant")
    return data


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _has_big_string(obj: Any) -> bool:
    if isinstance(obj, str):
        return len(obj) > BIG_STRING
    if isinstance(obj, dict):
        return any(_has_big_string(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_big_string(v) for v in obj)
    return False


class JsonPieces:
    """The JSON of ``obj`` (exactly :func:`json.dumps`'s compact text, UTF-8) as an iterable of byte pieces for
    httpx's ``content=``: big strings are escaped a slice at a time. ``len()`` is the byte count (the request's
    Content-Length, counted once up front); iterable again for a second send."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.size = sum(len(piece) for piece in self)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[bytes]:
        for text in self._pieces(self.obj):
            yield text.encode("utf-8")

    def _pieces(self, obj: Any) -> Iterator[str]:
        if isinstance(obj, str) and len(obj) > BIG_STRING:
            yield '"'
            for start in range(0, len(obj), BIG_STRING):
                yield _dumps(obj[start:start + BIG_STRING])[1:-1]
            yield '"'
        elif isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
            yield "{"
            for i, (key, value) in enumerate(obj.items()):
                yield ("," if i else "") + _dumps(key) + ":"
                yield from self._pieces(value)
            yield "}"
        elif isinstance(obj, (list, tuple)):
            yield "["
            for i, value in enumerate(obj):
                if i:
                    yield ","
                yield from self._pieces(value)
            yield "]"
        else:
            yield _dumps(obj)


def _has_non_finite(obj: Any) -> bool:
    if isinstance(obj, float):
        return not math.isfinite(obj)
    if isinstance(obj, dict):
        return any(_has_non_finite(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_non_finite(v) for v in obj)
    return False
