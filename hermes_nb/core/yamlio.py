"""Reading and writing YAML: libyaml's C loader and dumper when PyYAML has them.

The pure-Python loader takes seconds on a multi-megabyte mission; libyaml is
installed with PyYAML's wheels. Errors become one :class:`ConfigError` line
naming the file and the line.
"""

from __future__ import annotations

from typing import Any

import yaml

from hermes_nb.core.errors import ConfigError

__all__ = ["SafeLoader", "load_yaml", "dump_yaml", "C_YAML", "read_text_file", "read_bytes_file", "decode_utf8"]

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
#: True when libyaml does the work
C_YAML = SafeLoader is not yaml.SafeLoader


def read_text_file(path: Any, what: str, *, max_bytes: int | None = None) -> str:
    """A user file (manifest, mission, workflow, prompt) as UTF-8 text; each way it cannot be read is one
    ConfigError line: ``<what> not found``, ``is a directory``, ``is not UTF-8 text (byte N: 0xXX)``,
    ``is larger than N bytes``, ``cannot read: <why>``. ``max_bytes``: read at most that much (``/dev/zero`` or
    a huge file is refused after reading ``max_bytes + 1`` bytes, never read whole)."""
    return decode_utf8(read_bytes_file(path, what, max_bytes=max_bytes), what)


def read_bytes_file(path: Any, what: str, *, max_bytes: int | None = None) -> bytes:
    """The bytes of a user file, with :func:`read_text_file`'s errors (all but the UTF-8 one)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory, expected a file") from None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read: {exc.strerror}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise ConfigError(f"{what} is larger than {max_bytes} bytes (the limit; raise it if you mean it)")
    return data


def decode_utf8(data: bytes, what: str) -> str:
    """``data`` as UTF-8; else one ConfigError naming ``what``, the byte offset and the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} is not UTF-8 text (byte {exc.start}: 0x{data[exc.start]:02x})") from None


def load_yaml(text: str, *, where: str) -> Any:
    """``yaml.safe_load`` through libyaml; a syntax error is a ConfigError naming ``where`` and the line."""
    try:
        return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{where}: invalid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None


class _BlockDumper(_SafeDumper):  # type: ignore[misc]  # the base is picked at import: libyaml's C dumper if built
    """Multi-line strings as ``|`` blocks (readable args, bodies and prompts)."""


def _str_representer(dumper: Any, value: str) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _str_representer)


def dump_yaml(obj: Any, *, block_strings: bool = True) -> str:
    """YAML text in key order; multi-line strings as ``|`` blocks unless ``block_strings`` is False."""
    dumper = _BlockDumper if block_strings else _SafeDumper
    return yaml.dump(obj, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
