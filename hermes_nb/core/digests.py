"""sha256 digests and the canonical JSON they are taken over."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

__all__ = ["sha256_bytes", "sha256_file", "canonical_json", "json_digest"]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same data always gives the same text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def json_digest(obj: Any) -> str:
    """sha256 of :func:`canonical_json`."""
    return sha256_bytes(canonical_json(obj).encode("utf-8"))
