"""What notebook cells, the console and the magics call (the kernel side). Its names load on first use, so a job
notebook's ``from hermes_nb import kit`` does not import the widgets."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"Job": "job", "open_job": "job", "artifact_digests": "job", "record_verdict": "job",
         "wire_summary": "job", "check_summary": "job", "run_summary": "job",
         "ConsoleActions": "session", "ConsoleSession": "session", "ProbeConsole": "console"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'hermes_nb.kit' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hermes_nb.kit.{_LAZY[name]}"), name)
