"""What a command prints: human lines, or exactly one JSON object with ``--json``."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["Output"]


class Output:
    """Human lines on a terminal, or exactly one JSON object with ``--json``."""

    def __init__(self, json_mode: bool, stream: Any = None, err: Any = None) -> None:
        self.json_mode = json_mode
        self.stream = stream or sys.stdout
        self.err = err or sys.stderr
        self._emitted = False
        #: the ``exit_code`` the emitted object announced, if any
        self.emitted_exit_code: int | None = None

    def line(self, text: str = "") -> None:
        """Human output (suppressed in --json mode: goes to stderr there)."""
        if self.json_mode:
            return
        print(text, file=self.stream, flush=True)

    def info(self, text: str) -> None:
        """Progress/diagnostic line: always stderr, so stdout stays parseable."""
        print(text, file=self.err, flush=True)

    def emit(self, obj: dict[str, Any]) -> None:
        """The single JSON object (only in --json mode, only once)."""
        if not self.json_mode:
            return
        if self._emitted:
            raise RuntimeError("Output.emit called twice")
        self._emitted = True
        code = obj.get("exit_code")
        self.emitted_exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        print(json.dumps(obj, indent=2, default=str, ensure_ascii=False), file=self.stream, flush=True)

    @property
    def emitted(self) -> bool:
        return self._emitted
