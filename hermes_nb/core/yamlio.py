"""User files and YAML through libyaml's C loader and dumper (the pure-Python loader takes seconds on a big
mission); each way a file cannot be read is one :class:`ConfigError` line naming it."""

from __future__ import annotations

import os
import stat
from typing import Any

import yaml

from hermes_nb.core.errors import ConfigError

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_text_file(path: Any, what: str, *, max_bytes: int | None = None) -> str:
    """A user file (manifest, mission, workflow, prompt) as UTF-8 text, at most ``max_bytes``."""
    return decode_utf8(read_bytes_file(path, what, max_bytes=max_bytes), what)


def decode_utf8(data: bytes | memoryview, what: str, *, offset: int = 0) -> str:
    """``offset``: where ``data`` starts in what was read (a view decodes without a copy)."""
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} is not UTF-8 text (byte {offset + exc.start}: 0x{data[exc.start]:02x})") from None


def read_bytes_file(path: Any, what: str, *, max_bytes: int | None = None) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read() if max_bytes is None else read_limited(handle, max_bytes, what)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory, expected a file") from None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read: {exc.strerror}") from None


def read_limited(handle: Any, max_bytes: int, what: str) -> Any:
    """At most ``max_bytes`` from ``handle``, a chunk at a time (``/dev/zero`` is refused after ``max_bytes + 1``)."""
    try:
        status = os.fstat(handle.fileno())
        size_hint = status.st_size if stat.S_ISREG(status.st_mode) else 0
    except (AttributeError, OSError, ValueError):  # no descriptor (io.UnsupportedOperation is both)
        size_hint = 0
    parts: list[Any] = []
    left = max_bytes + 1
    while left > 0:
        part = handle.read(min(left, max(1 << 20, size_hint + 1)))  # a limit is a bound, never an allocation
        if not part:
            break
        parts.append(part)
        left -= len(part)
    data = parts[0] if len(parts) == 1 else (parts[0][:0] if parts else b"").join(parts)
    if left <= 0:
        raise ConfigError(f"{what} is larger than {max_bytes} bytes (the limit; raise it if you mean it)")
    return data


def load_yaml(text: str, *, where: str) -> Any:
    try:
        return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{where}: invalid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None


class _BlockDumper(_SafeDumper):  # type: ignore[misc]  # the base is picked at import: libyaml's C dumper if built
    """Multi-line strings as ``|`` blocks (readable args, bodies and prompts)."""


_BlockDumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None))


def dump_yaml(obj: Any, *, block_strings: bool = True) -> str:
    dumper = _BlockDumper if block_strings else _SafeDumper
    return yaml.dump(obj, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
